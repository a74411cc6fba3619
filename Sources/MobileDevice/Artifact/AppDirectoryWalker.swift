import Foundation
import HADeployCore

/// One entry of an `.app` directory tree, relative to the bundle.
struct AppDirectoryEntry: Sendable {
    enum Kind: Sendable, Equatable {
        case directory
        case file(size: Int)
        case symbolicLink(target: String)
    }

    let relativePath: String
    let url: URL
    let kind: Kind
    /// A file's modification time and inode ("" for other kinds), for `AppArtifact.fingerprint`.
    var stamp = ""
}

/// Lists an `.app` bundle in a stable order (directories before their contents), without
/// following symbolic links — frameworks in a bundle use relative links that must stay links.
enum AppDirectoryWalker {
    static func entries(of root: URL, in fileSystem: any FileSystem) throws -> [AppDirectoryEntry] {
        var result: [AppDirectoryEntry] = []
        try walk(root, relative: "", in: fileSystem, into: &result)
        return result
    }

    private static func walk(
        _ directory: URL, relative: String, in fileSystem: any FileSystem,
        into result: inout [AppDirectoryEntry]
    ) throws {
        let fileManager = fileSystem
        for name in try fileManager.contentsOfDirectory(atPath: directory.path).sorted() {
            let url = directory.appendingPathComponent(name)
            let path = relative.isEmpty ? name : relative + "/" + name
            let attributes = try fileManager.attributesOfItem(atPath: url.path)
            switch attributes[.type] as? FileAttributeType {
            case .typeSymbolicLink?:
                let target = try fileManager.destinationOfSymbolicLink(atPath: url.path)
                result.append(
                    AppDirectoryEntry(relativePath: path, url: url, kind: .symbolicLink(target: target)))
            case .typeDirectory?:
                result.append(AppDirectoryEntry(relativePath: path, url: url, kind: .directory))
                try walk(url, relative: path, in: fileSystem, into: &result)
            case .typeRegular?:
                let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
                let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
                result.append(
                    AppDirectoryEntry(
                        relativePath: path, url: url, kind: .file(size: size), stamp: "\(modified)-\(inode)"))
            default:
                continue  // sockets, devices: nothing an app bundle should contain
            }
        }
    }
}
