import Foundation
import HADeployCore

/// Where a flavour's build plan runs: this machine, or a macOS builder reached over SSH. The build
/// executor runs the same plan through either; paths are relative to the app repository's root there.
public protocol BuildMachine: Sendable {
    /// Shown in messages: "this machine" or the build host's address.
    var name: String { get }
    /// Makes the source tree available there (a no-op here; an upload for a remote builder).
    func prepare() async throws
    /// Runs a command from the plan in the repository root there.
    func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput
    /// Runs a command that needs no source tree (a tool's version, for the cache key): a remote
    /// builder answers it without the upload, so an unchanged build costs one round trip.
    func query(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput
    /// A small file's contents there, nil if it does not exist.
    func read(_ path: String) async throws -> Data?
    func write(_ data: Data, to path: String) async throws
    func exists(_ path: String) async throws -> Bool
    /// A local copy of a directory there (the built `.app`), placed under `localDirectory`.
    func fetch(_ path: String, into localDirectory: URL) async throws -> URL
    /// Rewrites a command for this machine (remote tool paths, uploaded key files).
    func adapt(_ command: ProcessCommand) async throws -> ProcessCommand
    /// Releases whatever `prepare` left behind that must not stay (uploaded secrets).
    func finish() async
    /// The repository's absolute path there, once known (compiler messages name files by it).
    func sourcePath() async -> String?
}

/// The build runs here, in the repository itself.
public struct LocalBuildMachine: BuildMachine {
    public var runner: any ProcessRunner
    public var root: URL
    public var fileSystem: any FileSystem

    public init(runner: any ProcessRunner, root: URL, fileSystem: any FileSystem) {
        self.runner = runner
        self.root = root
        self.fileSystem = fileSystem
    }

    public var name: String { "this machine" }

    public func prepare() async throws {}

    public func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        var command = command
        command.workingDirectory = root.path
        return try await runner.run(command, timeout: timeout)
    }

    public func query(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        try await run(command, timeout: timeout)
    }

    public func read(_ path: String) async throws -> Data? {
        fileSystem.contents(atPath: root.appendingPathComponent(path).path)
    }

    public func write(_ data: Data, to path: String) async throws {
        let url = root.appendingPathComponent(path)
        try fileSystem.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fileSystem.write(data, to: url, options: .atomic)
    }

    public func exists(_ path: String) async throws -> Bool {
        fileSystem.fileExists(atPath: root.appendingPathComponent(path).path)
    }

    public func fetch(_ path: String, into localDirectory: URL) async throws -> URL {
        root.appendingPathComponent(path)
    }

    public func adapt(_ command: ProcessCommand) async throws -> ProcessCommand { command }

    public func finish() async {}

    public func sourcePath() async -> String? { root.standardizedFileURL.path }
}
