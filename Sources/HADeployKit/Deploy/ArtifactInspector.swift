import Foundation
import HADeployCore
import MobileDevice
import ZIPFoundation

/// Why an artifact cannot be used.
public struct ArtifactError: Error, CustomStringConvertible, ExitStatusProviding {
    public var path: String
    public var problem: String

    public var description: String { "\(path): \(problem)" }
    public var exitStatus: ExitStatus { .buildFailed }
}

/// Reads what an `.app` directory or `.ipa` holds: bundle id, versions, executable slices.
public struct ArtifactInspector: Sendable {
    public init() {}

    public func inspect(_ url: URL, flavour: String) throws -> Artifact {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ArtifactError(path: url.path, problem: "no such file or directory")
        }
        let info: [String: Any]
        let executable: Data
        if isDirectory.boolValue {
            guard
                let data = try Self.head(
                    url.appendingPathComponent("Info.plist"), limit: Self.infoPlistLimit, whole: true,
                    path: url.path)
            else {
                throw ArtifactError(path: url.path, problem: "not an app bundle: no Info.plist")
            }
            info = try Self.plist(data, path: url.path)
            guard let name = info["CFBundleExecutable"] as? String,
                let binary = try Self.head(
                    url.appendingPathComponent(name), limit: Self.headerLimit, whole: false, path: url.path)
            else {
                throw ArtifactError(path: url.path, problem: "Info.plist names no executable that exists")
            }
            executable = binary
        } else {
            let archive: Archive
            do {
                archive = try Archive(url: url, accessMode: .read)
            } catch {
                throw ArtifactError(path: url.path, problem: "not an .ipa (not a zip archive)")
            }
            guard
                let entry = archive.first(where: {
                    let parts = $0.path.split(separator: "/")
                    return parts.count == 3 && parts[0] == "Payload" && parts[1].hasSuffix(".app")
                        && parts[2] == "Info.plist"
                })
            else {
                throw ArtifactError(path: url.path, problem: "not an .ipa: no Payload/<Name>.app/Info.plist")
            }
            info = try Self.plist(
                try Self.extract(
                    entry, from: archive, limit: Self.infoPlistLimit, whole: true, path: url.path),
                path: url.path)
            let appDirectory = (entry.path as NSString).deletingLastPathComponent
            guard let name = info["CFBundleExecutable"] as? String,
                let binaryEntry = archive["\(appDirectory)/\(name)"]
            else {
                throw ArtifactError(path: url.path, problem: "the app's executable is missing from the .ipa")
            }
            // The header is all we need; read only the start of the executable.
            executable = try Self.extract(binaryEntry, from: archive, limit: Self.headerLimit, path: url.path)
        }
        guard let bundleID = info["CFBundleIdentifier"] as? String else {
            throw ArtifactError(path: url.path, problem: "Info.plist has no CFBundleIdentifier")
        }
        // Every backend builds device or simulator paths from these names: check them once, here.
        if let problem = ArtifactNames.bundleIdentifierProblem(bundleID) {
            throw ArtifactError(path: url.path, problem: problem + " (nothing was installed anywhere)")
        }
        let executableName = info["CFBundleExecutable"] as? String ?? ""
        if let problem = ArtifactNames.pathComponentProblem(executableName, what: "CFBundleExecutable") {
            throw ArtifactError(path: url.path, problem: problem + " (nothing was installed anywhere)")
        }
        return Artifact(
            path: url.path, bundleID: bundleID, executable: info["CFBundleExecutable"] as? String ?? "",
            marketingVersion: info["CFBundleShortVersionString"] as? String ?? "0.0.0",
            buildNumber: info["CFBundleVersion"] as? String ?? "0", flavour: flavour,
            archs: (try? MachOSlices.architectures(inHeader: [UInt8](executable.prefix(Self.headerLimit))))
                ?? [])
    }

    static func plist(_ data: Data, path: String) throws -> [String: Any] {
        guard
            let value = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        else {
            throw ArtifactError(path: path, problem: "Info.plist is not a valid property list")
        }
        return value
    }

    /// An Info.plist is a few kilobytes; a hostile archive can inflate one to gigabytes.
    static let infoPlistLimit = 4 << 20
    /// Enough of an executable for its Mach-O header and every fat slice's.
    static let headerLimit = 64 * 1024

    /// At most `limit` bytes of an entry, decompressing no further; with `whole`, an entry longer
    /// than that is an error instead of being cut.
    static func extract(_ entry: Entry, from archive: Archive, limit: Int, whole: Bool = false, path: String)
        throws -> Data
    {
        var data = Data()
        var cut = false
        struct Enough: Error {}
        do {
            _ = try archive.extract(entry, bufferSize: 64 * 1024, skipCRC32: true) { chunk in
                data.append(chunk.prefix(limit + 1 - data.count))
                if data.count > limit {
                    cut = true
                    throw Enough()
                }
            }
        } catch is Enough {
        } catch {
            throw ArtifactError(
                path: path, problem: "\(entry.path) cannot be read from the archive (\(error))")
        }
        if cut && whole {
            throw ArtifactError(
                path: path,
                problem: "\(entry.path) inflates to more than \(limit / 1024 / 1024) MB: not a real app")
        }
        return data.prefix(limit)
    }

    /// At most `limit` bytes of a file (a FIFO or a device in an app directory is no file to read).
    static func head(_ url: URL, limit: Int, whole: Bool, path: String) throws -> Data? {
        guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey]),
            values.isRegularFile == true
        else { return nil }
        if whole, (values.fileSize ?? 0) > limit {
            throw ArtifactError(
                path: path,
                problem: "\(url.lastPathComponent) is larger than \(limit / 1024 / 1024) MB: not a real app")
        }
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        return try handle.read(upToCount: limit) ?? Data()
    }
}
