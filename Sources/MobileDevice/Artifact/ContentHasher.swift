import Foundation
import HADeployCore
import HostCrypto

/// SHA-256 of an artifact's content, streamed (never the whole file in memory): the file's bytes for
/// an `.ipa`; for an `.app` directory, every entry in sorted path order (type, relative path,
/// size, bytes or link target), so a renamed or changed file changes the hash.
public enum ContentHasher {
    static let chunkSize = 1 << 20

    public static func hash(of url: URL, isDirectory: Bool, in fileSystem: any FileSystem) throws -> String {
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        if isDirectory {
            for entry in try AppDirectoryWalker.entries(of: url, in: fileSystem) {
                switch entry.kind {
                case .directory:
                    hasher.update(Data("D\0\(entry.relativePath)\0".utf8))
                case .symbolicLink(let target):
                    hasher.update(Data("L\0\(entry.relativePath)\0\(target)\0".utf8))
                case .file(let size):
                    hasher.update(Data("F\0\(entry.relativePath)\0\(size)\0".utf8))
                    try feed(file: entry.url, into: hasher, buffer: buffer)
                }
            }
        } else {
            try feed(file: url, into: hasher, buffer: buffer)
        }
        return hasher.finalizeHex()
    }

    private static func feed(file: URL, into hasher: SHA256Hasher, buffer: UnsafeMutableRawBufferPointer)
        throws
    {
        let reader = try ChunkedFileReader(url: file)
        while true {
            let count = try reader.read(into: buffer)
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}

/// Reads a file sequentially into a caller-owned buffer (POSIX read, no per-chunk allocation).
final class ChunkedFileReader {
    let url: URL
    private let descriptor: Int32

    init(url: URL) throws {
        self.url = url
        descriptor = open(url.path, O_RDONLY)
        guard descriptor >= 0 else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    deinit { close(descriptor) }

    /// Fills as much of `buffer` as the file has left; 0 at end of file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var total = 0
        while total < buffer.count {
            let count = PlatformCalls.readFile(descriptor, buffer.baseAddress! + total, buffer.count - total)
            if count < 0 {
                if errno == EINTR { continue }
                throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: url.path])
            }
            if count == 0 { break }
            total += count
        }
        return total
    }
}
