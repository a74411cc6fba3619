import Foundation
import HADeployCore
import HostCrypto

/// The files of a local `.app` directory, in a stable order, as they will be uploaded.
public struct LocalTree: Sendable {
    public enum Kind: Sendable, Equatable {
        case directory
        case file(size: Int64)
        case symlink(target: String)
    }

    public struct Entry: Sendable {
        /// Relative to the root, `/`-separated, no leading slash.
        public let path: String
        public let kind: Kind
        /// Uploaded mode: 0755 for directories and executables, 0644 otherwise.
        public let mode: Int
    }

    public let root: URL
    public let entries: [Entry]

    private init(root: URL, entries: [Entry]) {
        self.root = root
        self.entries = entries
    }

    /// The same tree reduced to the files in `paths`, every symbolic link and every directory (cheap to
    /// send, and SFTP/SCP need the parents): what a delta upload sends.
    public func keeping(files paths: Set<String>) -> LocalTree {
        LocalTree(
            root: root,
            entries: entries.filter {
                if case .file = $0.kind { return paths.contains($0.path) }
                return true
            })
    }

    /// SHA-256 of one file's bytes, lower-case hex (what `sha256sum` or `openssl dgst -sha256` print).
    public func fileHash(_ entry: Entry) throws -> String {
        let hasher = SHA256Hasher()
        try forEachChunk(of: entry) { hasher.update($0) }
        return hasher.finalizeHex()
    }

    public var totalBytes: Int64 {
        entries.reduce(0) {
            if case .file(let size) = $1.kind { return $0 + size }
            return $0
        }
    }

    public init(root given: URL, in fileSystem: any FileSystem) throws {
        // A link to the bundle is followed once: listing the link itself would find nothing and
        // install an empty app.
        let root = given.resolvingSymlinksInPath()
        self.root = root
        let manager = fileSystem
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw SSHError.localFileFailed(path: root.path, reason: "not a directory")
        }
        let paths: [String]
        do {
            // Sorted by components, so a directory's contents follow it directly ("A", "A/x", "A.b" — plain
            // string order would put "A.b" between "A" and "A/x"), as SCP and mkdir need.
            paths = try manager.subpathsOfDirectory(atPath: root.path).sorted {
                $0.split(separator: "/").lexicographicallyPrecedes($1.split(separator: "/"))
            }
        } catch {
            throw SSHError.localFileFailed(path: root.path, reason: error.localizedDescription)
        }
        var entries: [Entry] = []
        for path in paths {
            if path.contains("\n") {
                throw SSHError.localFileFailed(
                    path: path, reason: "file names with line breaks cannot be uploaded")
            }
            let full = root.appendingPathComponent(path).path
            let attributes: [FileAttributeKey: Any]
            do {
                attributes = try manager.attributesOfItem(atPath: full)
            } catch {
                throw SSHError.localFileFailed(path: full, reason: error.localizedDescription)
            }
            let type = attributes[.type] as? FileAttributeType
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o644
            switch type {
            case .typeDirectory?:
                entries.append(Entry(path: path, kind: .directory, mode: 0o755))
            case .typeSymbolicLink?:
                let target = (try? manager.destinationOfSymbolicLink(atPath: full)) ?? ""
                entries.append(Entry(path: path, kind: .symlink(target: target), mode: 0o777))
            case .typeRegular?:
                let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
                let mode = permissions & 0o111 != 0 ? 0o755 : 0o644
                entries.append(Entry(path: path, kind: .file(size: size), mode: mode))
            default:
                throw SSHError.localFileFailed(path: full, reason: "not a file, directory or symbolic link")
            }
        }
        if !entries.contains(where: { $0.path == "Info.plist" || $0.path == "Contents/Info.plist" }) {
            throw SSHError.localFileFailed(
                path: given.path, reason: "not an app bundle (no Info.plist in it): nothing to install")
        }
        self.entries = entries
    }

    /// SHA-256 over names, kinds, uploaded modes and contents: equal hashes mean the installed copy is
    /// byte-for-byte what would be uploaded.
    public func contentHash() throws -> String {
        let hasher = SHA256Hasher()
        for entry in entries {
            switch entry.kind {
            case .directory:
                hasher.update(Data("d \(entry.path)\n".utf8))
            case .symlink(let target):
                hasher.update(Data("l \(entry.path) \(target)\n".utf8))
            case .file(let size):
                hasher.update(Data("f \(entry.path) \(String(entry.mode, radix: 8)) \(size)\n".utf8))
                try forEachChunk(of: entry) { hasher.update($0) }
            }
        }
        return hasher.finalizeHex()
    }

    /// Reads a file in 64 KiB chunks.
    func forEachChunk(of entry: Entry, _ body: (Data) throws -> Void) throws {
        let path = root.appendingPathComponent(entry.path).path
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SSHError.localFileFailed(path: path, reason: "cannot open for reading")
        }
        defer { try? handle.close() }
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 64 * 1024) ?? Data()
            } catch {
                throw SSHError.localFileFailed(path: path, reason: error.localizedDescription)
            }
            if chunk.isEmpty { break }
            try body(chunk)
        }
    }
}
