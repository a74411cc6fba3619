import Foundation
import HADeployCore
import Testing

/// A `ProcessRunner` that replays a script: each step names the exact command it expects
/// (`Self.any` matches one argument whose value is random, like a temp file) and what the
/// "tool" does — its output, its exit status, files it writes.
final class ScriptedRunner: ProcessRunner, @unchecked Sendable {
    static let any = "<any>"

    struct Step {
        var executable: String
        var arguments: [String]
        var status: Int32 = 0
        var stdout: String = ""
        var stderr: String = ""
        var error: ProcessError?
        /// Runs when the command arrives: writes the files the real tool would write.
        var effect: (@Sendable (ProcessCommand) throws -> Void)?
    }

    private let lock = NSLock()
    private var steps: [Step]
    private var log: [(command: ProcessCommand, timeout: Duration)] = []

    init(_ steps: [Step]) {
        self.steps = steps
    }

    var received: [ProcessCommand] { lock.withLock { log.map(\.command) } }
    var timeouts: [Duration] { lock.withLock { log.map(\.timeout) } }
    var remaining: Int { lock.withLock { steps.count } }

    func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        let step: Step? = lock.withLock {
            log.append((command, timeout))
            return steps.isEmpty ? nil : steps.removeFirst()
        }
        guard let step else {
            Issue.record("unexpected command: \(command)")
            throw ProcessError.launchFailed(command: command, reason: "not in the script")
        }
        #expect(command.executable == step.executable)
        #expect(Self.matches(command.arguments, step.arguments), "got \(command.arguments)")
        if let error = step.error { throw error }
        try step.effect?(command)
        return ProcessOutput(
            status: step.status, standardOutput: Data(step.stdout.utf8), standardError: Data(step.stderr.utf8)
        )
    }

    static func matches(_ arguments: [String], _ pattern: [String]) -> Bool {
        arguments.count == pattern.count && zip(arguments, pattern).allSatisfy { $1 == any || $0 == $1 }
    }
}

extension ProcessCommand {
    /// The value after `option` in the argument list (`--json-output` → its path).
    func value(after option: String) -> String? {
        guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// The hand-written tool outputs in Fixtures/apple (see its README), read from the source tree.
enum AppleFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/apple")

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }

    static func text(_ name: String) throws -> String { String(decoding: try data(name), as: UTF8.self) }

    /// An effect writing `name` where the command's `option` points (devicectl's `--json-output`).
    static func writes(_ name: String, at option: String) -> @Sendable (ProcessCommand) throws -> Void {
        { command in
            let path = try #require(command.value(after: option))
            try data(name).write(to: URL(fileURLWithPath: path))
        }
    }

    /// An effect writing a tiny PNG to the command's last argument (a screenshot tool's output file).
    static let writesPNG: @Sendable (ProcessCommand) throws -> Void = { command in
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
        try png.write(to: URL(fileURLWithPath: try #require(command.arguments.last)))
    }
}

/// A temporary directory removed when the test ends.
final class TemporaryFolder: @unchecked Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}
