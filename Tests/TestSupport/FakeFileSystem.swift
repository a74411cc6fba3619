import Foundation
import HADeployCore
import Testing

/// A fail-by-default `FileSystem` for tests: real files, but only under its own temporary root.
/// Its home, working and temporary folders are inside the root; touching any path outside it fails
/// the test, naming the call.
public final class FakeFileSystem: FileSystem, @unchecked Sendable {
    /// What a call outside the root throws (after recording the issue).
    public struct OutsideRoot: Error, CustomStringConvertible {
        public var call: String
        public var description: String { "the fake file system was not set up for \(call)" }
    }

    public let root: URL
    private let manager = FileManager()

    /// A new empty root in the machine's temporary folder, with `home`, `work` and `tmp` in it.
    public init() {
        root =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "hadeploy-fakefs-\(UUID().uuidString)"
            ).standardizedFileURL
        for folder in [homeDirectory, currentDirectory, temporaryDirectory] {
            try? manager.createDirectory(at: folder, withIntermediateDirectories: true)
        }
    }

    deinit { try? manager.removeItem(at: root) }

    public var homeDirectory: URL { root.appendingPathComponent("home") }
    public var currentDirectory: URL { root.appendingPathComponent("work") }
    public var temporaryDirectory: URL { root.appendingPathComponent("tmp") }

    /// Writes a file under the root (test setup), creating its folders.
    public func place(_ text: String, at relativePath: String, in folder: URL? = nil) throws {
        let url = (folder ?? currentDirectory).appendingPathComponent(relativePath)
        try manager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    private func inside(_ path: String) -> Bool {
        let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
        return standardized == root.path || standardized.hasPrefix(root.path + "/")
    }

    /// Records an issue and returns false when `paths` leave the root.
    private func allowed(_ call: String, _ paths: String...) -> Bool {
        guard paths.allSatisfy(inside) else {
            Issue.record("FakeFileSystem: unexpected \(call) (outside \(root.path))")
            return false
        }
        return true
    }

    private func check(_ call: String, _ paths: String...) throws {
        guard paths.allSatisfy(inside) else {
            Issue.record("FakeFileSystem: unexpected \(call) (outside \(root.path))")
            throw OutsideRoot(call: call)
        }
    }

    public func contents(atPath path: String) -> Data? {
        allowed("contents(atPath: \(path))", path) ? manager.contents(atPath: path) : nil
    }

    public func read(atPath path: String, chunkSize: Int, _ body: (Data) throws -> Void) throws {
        try check("read(atPath: \(path))", path)
        try FileChunks.read(atPath: path, chunkSize: chunkSize, body)
    }

    public func write(_ data: Data, to url: URL, options: Data.WritingOptions) throws {
        try check("write(to: \(url.path))", url.path)
        try data.write(to: url, options: options)
    }

    public func createFile(atPath path: String, contents: Data?, attributes: [FileAttributeKey: Any]?) -> Bool
    {
        allowed("createFile(atPath: \(path))", path)
            && manager.createFile(atPath: path, contents: contents, attributes: attributes)
    }

    public func fileExists(atPath path: String) -> Bool {
        allowed("fileExists(atPath: \(path))", path) && manager.fileExists(atPath: path)
    }

    public func fileExists(atPath path: String, isDirectory: UnsafeMutablePointer<ObjCBool>?) -> Bool {
        allowed("fileExists(atPath: \(path))", path)
            && manager.fileExists(atPath: path, isDirectory: isDirectory)
    }

    public func isExecutableFile(atPath path: String) -> Bool {
        allowed("isExecutableFile(atPath: \(path))", path) && manager.isExecutableFile(atPath: path)
    }

    public func isReadableFile(atPath path: String) -> Bool {
        allowed("isReadableFile(atPath: \(path))", path) && manager.isReadableFile(atPath: path)
    }

    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        try check("contentsOfDirectory(atPath: \(path))", path)
        return try manager.contentsOfDirectory(atPath: path)
    }

    public func subpathsOfDirectory(atPath path: String) throws -> [String] {
        try check("subpathsOfDirectory(atPath: \(path))", path)
        return try manager.subpathsOfDirectory(atPath: path)
    }

    public func attributesOfItem(atPath path: String) throws -> [FileAttributeKey: Any] {
        try check("attributesOfItem(atPath: \(path))", path)
        return try manager.attributesOfItem(atPath: path)
    }

    public func setAttributes(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws {
        try check("setAttributes(ofItemAtPath: \(path))", path)
        try manager.setAttributes(attributes, ofItemAtPath: path)
    }

    public func destinationOfSymbolicLink(atPath path: String) throws -> String {
        try check("destinationOfSymbolicLink(atPath: \(path))", path)
        return try manager.destinationOfSymbolicLink(atPath: path)
    }

    public func createDirectory(
        at url: URL, withIntermediateDirectories: Bool, attributes: [FileAttributeKey: Any]?
    ) throws {
        try check("createDirectory(at: \(url.path))", url.path)
        try manager.createDirectory(
            at: url, withIntermediateDirectories: withIntermediateDirectories, attributes: attributes)
    }

    public func createSymbolicLink(atPath path: String, withDestinationPath destination: String) throws {
        try check("createSymbolicLink(atPath: \(path))", path)
        try manager.createSymbolicLink(atPath: path, withDestinationPath: destination)
    }

    public func removeItem(at url: URL) throws {
        try check("removeItem(at: \(url.path))", url.path)
        try manager.removeItem(at: url)
    }

    public func moveItem(at source: URL, to destination: URL) throws {
        try check("moveItem(at: \(source.path), to: \(destination.path))", source.path, destination.path)
        try manager.moveItem(at: source, to: destination)
    }

    public func copyItem(at source: URL, to destination: URL) throws {
        try check("copyItem(at: \(source.path), to: \(destination.path))", source.path, destination.path)
        try manager.copyItem(at: source, to: destination)
    }

    public func append(_ data: Data, toFileAtPath path: String) throws -> UInt64 {
        try check("append(toFileAtPath: \(path))", path)
        return try TestHost.fileSystem.append(data, toFileAtPath: path)
    }

    public func unzipItem(at source: URL, to destination: URL) throws {
        try check("unzipItem(at: \(source.path), to: \(destination.path))", source.path, destination.path)
        try TestHost.fileSystem.unzipItem(at: source, to: destination)
    }

    public func writePrivately(_ data: Data, to url: URL) throws {
        try check("writePrivately(to: \(url.path))", url.path)
        try PrivateFiles.write(data, to: url)
    }

    public func createPrivateDirectory(at url: URL) throws {
        try check("createPrivateDirectory(at: \(url.path))", url.path)
        try PrivateFiles.createDirectory(url)
    }

    public func restrictToOwner(atPath path: String) {
        if allowed("restrictToOwner(atPath: \(path))", path) { PrivateFiles.restrict(path) }
    }
}
