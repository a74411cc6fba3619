import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A configuration file (devices.yaml, `.env`) that cannot be used as one: not there, not a regular
/// file, too large, or not UTF-8 text. A configuration error (exit 78) naming the path and, when the
/// content is at fault, the line.
public struct TextFileError: Error, CustomStringConvertible, ExitStatusProviding, LocatedProblems {
    public var path: String
    public var reason: String
    /// Where in the file the problem is, when it is in the content.
    public var location: SourceLocation?

    public init(path: String, reason: String, location: SourceLocation? = nil) {
        self.path = path
        self.reason = reason
        self.location = location
    }

    public var description: String {
        if let location { return "\(location): error: \(reason)" }
        return "\(path.isEmpty ? "''" : path): \(reason)"
    }

    public var exitStatus: ExitStatus { .config }

    public var locatedProblems: [(location: SourceLocation, message: String)] {
        location.map { [($0, reason)] } ?? []
    }
}

/// Reads a configuration file the way a hostile path cannot abuse: only a regular file is read (a
/// FIFO would block the open or the read forever, `/dev/zero` never ends, a directory fails with a
/// raw Cocoa error), never more than `limit` bytes, and the text must be UTF-8.
public struct TextFileReader: Sendable {
    /// Configuration files are small; this is far above any real one and far below memory trouble.
    public static let defaultLimit = 8 * 1024 * 1024

    public var limit: Int

    public init(limit: Int = TextFileReader.defaultLimit) { self.limit = limit }

    /// Whether something is at `path` (a dangling name is "missing": callers decide if that is fine).
    public func exists(_ path: String, relativeTo base: URL? = nil) -> Bool {
        guard !path.isEmpty else { return true }
        var info = stat()
        return stat(resolve(path, base), &info) == 0
    }

    /// The file's text. `displayName` is how messages name it (the path the user typed).
    public func read(_ path: String, relativeTo base: URL? = nil, displayName: String? = nil) throws -> String
    {
        let name = displayName ?? path
        return try Self.decode(readData(path, relativeTo: base, displayName: displayName), name: name)
    }

    /// The file's bytes, with the same checks as ``read(_:relativeTo:displayName:)`` (a regular file,
    /// at most `limit` bytes) and no decoding: for the small files hadeploy keeps itself (install
    /// records, lock owners), which a damaged or planted file must not make huge.
    public func readData(_ path: String, relativeTo base: URL? = nil, displayName: String? = nil) throws
        -> Data
    {
        let name = displayName ?? path
        guard !path.isEmpty else {
            throw TextFileError(path: name, reason: "the path is empty; give the file's path")
        }
        let full = resolve(path, base)
        // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
        let fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw TextFileError(path: name, reason: "cannot be opened (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw TextFileError(path: name, reason: "cannot be read (\(String(cString: strerror(errno))))")
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            throw TextFileError(path: name, reason: "is \(Self.kind(type)), not a regular file")
        }
        guard Int64(info.st_size) <= Int64(limit) else {
            throw TextFileError(
                path: name,
                reason: "is \(info.st_size) bytes; a configuration file may be at most \(limit) bytes")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while data.count <= limit {
            let count = buffer.withUnsafeMutableBytes { SystemIO.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TextFileError(
                    path: name, reason: "cannot be read (\(String(cString: strerror(errno))))")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        // The file grew while it was read.
        guard data.count <= limit else {
            throw TextFileError(path: name, reason: "is larger than \(limit) bytes")
        }
        return data
    }

    /// UTF-8 text, or an error at the line and column of the first byte that is not.
    public static func decode(_ data: Data, name: String) throws -> String {
        if let text = String(data: data, encoding: .utf8) { return text }
        var line = 1
        var column = 1
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = data.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                if encoded.count == 1 && encoded.first == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .error:
                throw TextFileError(
                    path: name, reason: "not UTF-8 text (an invalid byte sequence here)",
                    location: SourceLocation(file: name, line: line, column: column))
            case .emptyInput:
                throw TextFileError(path: name, reason: "not UTF-8 text")
            }
        }
    }

    private func resolve(_ path: String, _ base: URL?) -> String {
        guard let base, !path.hasPrefix("/") else { return path }
        return base.appendingPathComponent(path).path
    }

    private static func kind(_ type: mode_t) -> String {
        switch type {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}
