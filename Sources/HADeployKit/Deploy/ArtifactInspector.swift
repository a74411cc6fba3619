import Foundation
import HADeployCore
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
        return Artifact(
            path: url.path, bundleID: bundleID, executable: info["CFBundleExecutable"] as? String ?? "",
            marketingVersion: info["CFBundleShortVersionString"] as? String ?? "0.0.0",
            buildNumber: info["CFBundleVersion"] as? String ?? "0", flavour: flavour,
            archs: MachOSlices.archs(of: executable))
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

/// Architecture names of a Mach-O image (thin or fat) from its header.
public enum MachOSlices {
    public static func archs(of data: Data) -> [String] {
        guard data.count >= 8 else { return [] }
        func be(_ offset: Int) -> UInt32 {
            data.count >= offset + 4
                ? data[data.startIndex + offset..<data.startIndex + offset + 4].reduce(0) {
                    $0 << 8 | UInt32($1)
                } : 0
        }
        func le(_ offset: Int) -> UInt32 { be(offset).byteSwapped }
        let magic = be(0)
        if magic == 0xCAFE_BABE || magic == 0xCAFE_BABF {
            let count = Int(be(4))
            let stride = magic == 0xCAFE_BABF ? 32 : 20
            // A fat header with more than a handful of slices is not a real app; cap the loop.
            return (0..<min(count, 16)).compactMap { index in
                name(type: be(8 + index * stride), subtype: be(12 + index * stride))
            }
        }
        if magic == 0xCFFA_EDFE || magic == 0xCEFA_EDFE {  // little-endian mach_header(_64)
            return name(type: le(4), subtype: le(8)).map { [$0] } ?? []
        }
        return []
    }

    static func name(type: UInt32, subtype: UInt32) -> String? {
        switch (type, subtype & 0x00FF_FFFF) {
        case (12, 9): return "armv7"
        case (12, 11): return "armv7s"
        case (12, _): return "arm"
        case (0x0100_000C, 2): return "arm64e"
        case (0x0100_000C, _): return "arm64"
        case (0x0100_0007, _): return "x86_64"
        case (7, _): return "i386"
        default: return nil
        }
    }
}
