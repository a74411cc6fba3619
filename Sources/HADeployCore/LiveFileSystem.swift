import Foundation
import ZIPFoundation

/// The machine's file system (the only place outside the emulator that talks to `FileManager`).
struct LiveFileSystem: FileSystem {
    init() {}

    private var manager: FileManager { FileManager.default }

    func contents(atPath path: String) -> Data? { manager.contents(atPath: path) }

    func read(atPath path: String, chunkSize: Int, _ body: (Data) throws -> Void) throws {
        try FileChunks.read(atPath: path, chunkSize: chunkSize, body)
    }

    func write(_ data: Data, to url: URL, options: Data.WritingOptions) throws {
        try data.write(to: url, options: options)
    }

    func createFile(atPath path: String, contents: Data?, attributes: [FileAttributeKey: Any]?) -> Bool {
        manager.createFile(atPath: path, contents: contents, attributes: attributes)
    }

    func fileExists(atPath path: String) -> Bool { manager.fileExists(atPath: path) }

    func fileExists(atPath path: String, isDirectory: UnsafeMutablePointer<ObjCBool>?) -> Bool {
        manager.fileExists(atPath: path, isDirectory: isDirectory)
    }

    func isExecutableFile(atPath path: String) -> Bool { manager.isExecutableFile(atPath: path) }
    func isReadableFile(atPath path: String) -> Bool { manager.isReadableFile(atPath: path) }

    func contentsOfDirectory(atPath path: String) throws -> [String] {
        try manager.contentsOfDirectory(atPath: path)
    }

    func subpathsOfDirectory(atPath path: String) throws -> [String] {
        try manager.subpathsOfDirectory(atPath: path)
    }

    func attributesOfItem(atPath path: String) throws -> [FileAttributeKey: Any] {
        try manager.attributesOfItem(atPath: path)
    }

    func setAttributes(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws {
        try manager.setAttributes(attributes, ofItemAtPath: path)
    }

    func destinationOfSymbolicLink(atPath path: String) throws -> String {
        try manager.destinationOfSymbolicLink(atPath: path)
    }

    func createDirectory(
        at url: URL, withIntermediateDirectories: Bool, attributes: [FileAttributeKey: Any]?
    ) throws {
        try manager.createDirectory(
            at: url, withIntermediateDirectories: withIntermediateDirectories, attributes: attributes)
    }

    func createSymbolicLink(atPath path: String, withDestinationPath destination: String) throws {
        try manager.createSymbolicLink(atPath: path, withDestinationPath: destination)
    }

    func removeItem(at url: URL) throws { try manager.removeItem(at: url) }
    func moveItem(at source: URL, to destination: URL) throws {
        try manager.moveItem(at: source, to: destination)
    }
    func copyItem(at source: URL, to destination: URL) throws {
        try manager.copyItem(at: source, to: destination)
    }

    func append(_ data: Data, toFileAtPath path: String) throws -> UInt64 {
        if !manager.fileExists(atPath: path) { _ = manager.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        try handle.write(contentsOf: data)
        return size + UInt64(data.count)
    }

    func unzipItem(at source: URL, to destination: URL) throws {
        try manager.unzipItem(at: source, to: destination)
    }

    func writePrivately(_ data: Data, to url: URL) throws { try PrivateFiles.write(data, to: url) }
    func createPrivateDirectory(at url: URL) throws { try PrivateFiles.createDirectory(url) }
    func restrictToOwner(atPath path: String) { PrivateFiles.restrict(path) }

    var temporaryDirectory: URL { manager.temporaryDirectory }
    var homeDirectory: URL { manager.homeDirectoryForCurrentUser }
    var currentDirectory: URL { URL(fileURLWithPath: manager.currentDirectoryPath) }
}
