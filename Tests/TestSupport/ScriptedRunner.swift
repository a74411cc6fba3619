import Foundation
import HADeployCore
import Testing

/// A fail-by-default `ProcessRunner` for tests of the middle: it replays a script: each step names the exact command it expects
/// (`Self.any` matches one argument whose value is random, like a temp file) and what the
/// "tool" does — its output, its exit status, files it writes.
public final class ScriptedRunner: ProcessRunner, @unchecked Sendable {
    public static let any = "<any>"

    public struct Step: Sendable {
        public var executable: String
        public var arguments: [String]
        public var status: Int32 = 0
        public var stdout: String = ""
        public var stderr: String = ""
        public var error: ProcessError?
        /// Runs when the command arrives: writes the files the real tool would write.
        public var effect: (@Sendable (ProcessCommand) throws -> Void)?

        public init(
            executable: String, arguments: [String], status: Int32 = 0, stdout: String = "",
            stderr: String = "",
            error: ProcessError? = nil, effect: (@Sendable (ProcessCommand) throws -> Void)? = nil
        ) {
            self.executable = executable
            self.arguments = arguments
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
            self.error = error
            self.effect = effect
        }
    }

    private let lock = NSLock()
    private var steps: [Step]
    private var log: [(command: ProcessCommand, timeout: Duration)] = []

    public init(_ steps: [Step]) {
        self.steps = steps
    }

    public var received: [ProcessCommand] { lock.withLock { log.map(\.command) } }
    public var timeouts: [Duration] { lock.withLock { log.map(\.timeout) } }
    public var remaining: Int { lock.withLock { steps.count } }

    public func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
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

    public static func matches(_ arguments: [String], _ pattern: [String]) -> Bool {
        arguments.count == pattern.count && zip(arguments, pattern).allSatisfy { $1 == any || $0 == $1 }
    }
}

/// A runner for tests that must run no command at all: any command fails the test.
public struct FailingRunner: ProcessRunner {
    public init() {}

    public func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        Issue.record("unexpected command: \(command)")
        throw ProcessError.launchFailed(command: command, reason: "no command may run in this test")
    }
}
