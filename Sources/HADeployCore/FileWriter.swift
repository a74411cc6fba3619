import Foundation

/// Writes generated files atomically, and only when their content changed, so tools downstream
/// (XcodeGen, Xcode's build system) see an untouched modification date when nothing changed.
public struct FileWriter: Sendable {
    public enum Outcome: String, Sendable, Codable {
        case created, updated, unchanged
    }

    public init() {}

    /// What writing `data` to `url` would do, without writing.
    public func outcome(writing data: Data, to url: URL) -> Outcome {
        guard let existing = FileManager.default.contents(atPath: url.path) else { return .created }
        return existing == data ? .unchanged : .updated
    }

    /// Writes `data` to `url` through a temporary file in the same directory and a rename.
    @discardableResult
    public func write(_ data: Data, to url: URL) throws -> Outcome {
        let outcome = outcome(writing: data, to: url)
        guard outcome != .unchanged else { return .unchanged }
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
        return outcome
    }
}
