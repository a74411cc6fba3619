import Foundation

/// Writes generated files atomically, and only when their content changed, so tools downstream
/// (XcodeGen, Xcode's build system) see an untouched modification date when nothing changed.
public struct FileWriter: Sendable {
    public enum Outcome: String, Sendable, Codable {
        case created, updated, unchanged
    }

    public let fileSystem: any FileSystem

    public init(fileSystem: any FileSystem) { self.fileSystem = fileSystem }

    /// What writing `data` to `url` would do, without writing.
    public func outcome(writing data: Data, to url: URL) -> Outcome {
        guard let existing = fileSystem.contents(atPath: url.path) else { return .created }
        return existing == data ? .unchanged : .updated
    }

    /// Writes `data` to `url` through a temporary file in the same directory and a rename.
    @discardableResult
    public func write(_ data: Data, to url: URL) throws -> Outcome {
        let outcome = outcome(writing: data, to: url)
        guard outcome != .unchanged else { return .unchanged }
        try fileSystem.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fileSystem.write(data, to: url, options: .atomic)
        return outcome
    }
}
