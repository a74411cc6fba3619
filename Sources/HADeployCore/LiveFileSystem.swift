import Foundation
import ZIPFoundation

/// The machine's file system (the only place outside the emulator that talks to `FileManager`).
public struct LiveFileSystem: FileSystem {
    public init() {}

    private var manager: FileManager { FileManager.default }

    public func contents(atPath path: String) -> Data? { manager.contents(atPath: path) }

    public func read(atPath path: String, chunkSize: Int, _ body: (Data) throws -> Void) throws {
        try FileChunks.read(atPath: path, chunkSize: chunkSize, body)
    }

    public func write(_ data: Data, to url: URL, options: Data.WritingOptions) throws {
        try data.write(to: url, options: options)
    }

    public func createFile(atPath path: String, contents: Data?, attributes: [FileAttributeKey: Any]?) -> Bool
    {
        manager.createFile(atPath: path, contents: contents, attributes: attributes)
    }

    public func fileExists(atPath path: String) -> Bool { manager.fileExists(atPath: path) }

    public func fileExists(atPath path: String, isDirectory: UnsafeMutablePointer<ObjCBool>?) -> Bool {
        manager.fileExists(atPath: path, isDirectory: isDirectory)
    }

    public func isExecutableFile(atPath path: String) -> Bool { manager.isExecutableFile(atPath: path) }
    public func isReadableFile(atPath path: String) -> Bool { manager.isReadableFile(atPath: path) }

    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        try manager.contentsOfDirectory(atPath: path)
    }

    public func subpathsOfDirectory(atPath path: String) throws -> [String] {
        try manager.subpathsOfDirectory(atPath: path)
    }

    public func attributesOfItem(atPath path: String) throws -> [FileAttributeKey: Any] {
        try manager.attributesOfItem(atPath: path)
    }

    public func setAttributes(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws {
        try manager.setAttributes(attributes, ofItemAtPath: path)
    }

    public func destinationOfSymbolicLink(atPath path: String) throws -> String {
        try manager.destinationOfSymbolicLink(atPath: path)
    }

    public func createDirectory(
        at url: URL, withIntermediateDirectories: Bool, attributes: [FileAttributeKey: Any]?
    ) throws {
        try manager.createDirectory(
            at: url, withIntermediateDirectories: withIntermediateDirectories, attributes: attributes)
    }

    public func createSymbolicLink(atPath path: String, withDestinationPath destination: String) throws {
        try manager.createSymbolicLink(atPath: path, withDestinationPath: destination)
    }

    public func removeItem(at url: URL) throws { try manager.removeItem(at: url) }
    public func moveItem(at source: URL, to destination: URL) throws {
        try manager.moveItem(at: source, to: destination)
    }
    public func copyItem(at source: URL, to destination: URL) throws {
        try manager.copyItem(at: source, to: destination)
    }

    public func append(_ data: Data, toFileAtPath path: String) throws -> UInt64 {
        if !manager.fileExists(atPath: path) { _ = manager.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        try handle.write(contentsOf: data)
        return size + UInt64(data.count)
    }

    public func unzipItem(at source: URL, to destination: URL) throws {
        try manager.unzipItem(at: source, to: destination)
    }

    public func writePrivately(_ data: Data, to url: URL) throws { try PrivateFiles.write(data, to: url) }
    public func createPrivateDirectory(at url: URL) throws { try PrivateFiles.createDirectory(url) }
    public func restrictToOwner(atPath path: String) { PrivateFiles.restrict(path) }

    public var temporaryDirectory: URL { manager.temporaryDirectory }
    public var homeDirectory: URL { manager.homeDirectoryForCurrentUser }
    public var currentDirectory: URL { URL(fileURLWithPath: manager.currentDirectoryPath) }
}
