import Foundation

/// The files hadeploy reads and writes, injected through the context so tests run against a folder
/// of their own (a fake rooted in a temporary directory) instead of the machine's.
///
/// The names follow `FileManager`'s, so code reads the same with either; paths are absolute.
public protocol FileSystem: Sendable {
    /// The file's bytes, or nil when it cannot be read.
    func contents(atPath path: String) -> Data?
    /// Reads the file at `path` from start to end in pieces of at most `chunkSize` bytes, handing each
    /// to `body` in order: a file of any size in bounded memory. Stops with CancellationError when the
    /// calling task is cancelled (SIGTERM, Ctrl-C).
    func read(atPath path: String, chunkSize: Int, _ body: (Data) throws -> Void) throws
    /// Writes `data` to `url` (`.atomic`: through a temporary file and a rename).
    func write(_ data: Data, to url: URL, options: Data.WritingOptions) throws
    func createFile(atPath path: String, contents: Data?, attributes: [FileAttributeKey: Any]?) -> Bool

    func fileExists(atPath path: String) -> Bool
    func fileExists(atPath path: String, isDirectory: UnsafeMutablePointer<ObjCBool>?) -> Bool
    func isExecutableFile(atPath path: String) -> Bool
    func isReadableFile(atPath path: String) -> Bool

    func contentsOfDirectory(atPath path: String) throws -> [String]
    /// Every path under `path`, relative to it, at any depth (symbolic links are not followed).
    func subpathsOfDirectory(atPath path: String) throws -> [String]
    func attributesOfItem(atPath path: String) throws -> [FileAttributeKey: Any]
    func setAttributes(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws
    func destinationOfSymbolicLink(atPath path: String) throws -> String

    func createDirectory(at url: URL, withIntermediateDirectories: Bool, attributes: [FileAttributeKey: Any]?)
        throws
    func createSymbolicLink(atPath path: String, withDestinationPath destination: String) throws
    func removeItem(at url: URL) throws
    func moveItem(at source: URL, to destination: URL) throws
    func copyItem(at source: URL, to destination: URL) throws
    /// Appends `data` to the file at `path` (made when missing) and returns the file's size after.
    func append(_ data: Data, toFileAtPath path: String) throws -> UInt64
    /// Extracts the zip archive at `source` into the folder `destination` (entries that would land
    /// outside it are refused).
    func unzipItem(at source: URL, to destination: URL) throws

    /// Files that hold secrets or say what was deployed where: owner-only from the first byte
    /// (``PrivateFiles``).
    func writePrivately(_ data: Data, to url: URL) throws
    func createPrivateDirectory(at url: URL) throws
    /// Makes an existing file owner-only.
    func restrictToOwner(atPath path: String)

    /// Where scratch files go (`TMPDIR`).
    var temporaryDirectory: URL { get }
    /// The user's home folder.
    var homeDirectory: URL { get }
    /// The working directory relative paths are resolved against.
    var currentDirectory: URL { get }
}

extension FileSystem {
    public func write(_ data: Data, to url: URL) throws { try write(data, to: url, options: .atomic) }

    public func createFile(atPath path: String, contents: Data?) -> Bool {
        createFile(atPath: path, contents: contents, attributes: nil)
    }

    public func createDirectory(at url: URL, withIntermediateDirectories: Bool = true) throws {
        try createDirectory(
            at: url, withIntermediateDirectories: withIntermediateDirectories, attributes: nil)
    }

    /// Whether `path` exists and is a folder.
    public func isDirectory(atPath path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The total size in bytes of the regular files under `url` (0 when it is missing).
    public func allocatedSize(ofDirectory url: URL) -> Int64 {
        let subpaths = (try? subpathsOfDirectory(atPath: url.path)) ?? []
        return subpaths.reduce(Int64(0)) { total, subpath in
            let attributes = (try? attributesOfItem(atPath: url.appendingPathComponent(subpath).path)) ?? [:]
            guard attributes[.type] as? FileAttributeType == .typeRegular else { return total }
            return total + ((attributes[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }
}
