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
                let data = FileManager.default.contents(atPath: url.appendingPathComponent("Info.plist").path)
            else {
                throw ArtifactError(path: url.path, problem: "not an app bundle: no Info.plist")
            }
            info = try Self.plist(data, path: url.path)
            guard let name = info["CFBundleExecutable"] as? String,
                let binary = try? Data(contentsOf: url.appendingPathComponent(name), options: .mappedIfSafe)
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
            info = try Self.plist(try Self.extract(entry, from: archive), path: url.path)
            let appDirectory = (entry.path as NSString).deletingLastPathComponent
            guard let name = info["CFBundleExecutable"] as? String,
                let binaryEntry = archive["\(appDirectory)/\(name)"]
            else {
                throw ArtifactError(path: url.path, problem: "the app's executable is missing from the .ipa")
            }
            // The header is all we need; read only the start of the executable.
            executable = try Self.extract(binaryEntry, from: archive, limit: 64 * 1024)
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
            archs: (try? MachOSlices.architectures(inHeader: [UInt8](executable.prefix(64 * 1024)))) ?? [])
    }

    static func plist(_ data: Data, path: String) throws -> [String: Any] {
        guard
            let value = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        else {
            throw ArtifactError(path: path, problem: "Info.plist is not a valid property list")
        }
        return value
    }

    static func extract(_ entry: Entry, from archive: Archive, limit: Int = .max) throws -> Data {
        var data = Data()
        struct Enough: Error {}
        do {
            _ = try archive.extract(entry, skipCRC32: true) { chunk in
                data.append(chunk)
                if data.count >= limit { throw Enough() }
            }
        } catch is Enough {}
        return data
    }
}
