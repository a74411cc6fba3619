import Foundation

/// The result of a finished process.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var standardOutput: Data
    public var standardError: Data

    public init(status: Int32, standardOutput: Data, standardError: Data) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    public var stdout: String { String(decoding: standardOutput, as: UTF8.self) }
    public var stderr: String { String(decoding: standardError, as: UTF8.self) }
}

/// Why running a command failed.
public enum ProcessError: Error, CustomStringConvertible, Sendable {
    case notFound(command: ProcessCommand)
    case launchFailed(command: ProcessCommand, reason: String)
    case timedOut(command: ProcessCommand, after: Duration)
    case nonZeroExit(command: ProcessCommand, output: ProcessOutput)

    public var description: String {
        switch self {
        case .notFound(let command):
            return "\(command.executable): command not found (is it installed and on PATH?)"
        case .launchFailed(let command, let reason):
            return "could not start `\(command)`: \(reason)"
        case .timedOut(let command, let after):
            return "`\(command)` did not finish within \(after.formattedSeconds) and was stopped"
        case .nonZeroExit(let command, let output):
            let detail = command.redact(output.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
            return "`\(command)` exited with status \(output.status)"
                + (detail.isEmpty ? "" : ": \(detail)")
        }
    }
}

/// Runs external commands. Injected through the context so the middle is testable without processes.
public protocol ProcessRunner: Sendable {
    /// Runs `command` to completion, killing it when `timeout` passes. Does not throw on a non-zero exit.
    func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput
    /// The file `run` would start for `executable` (a path, or a name looked up on PATH), nil when
    /// there is none. Runners that start no real processes find nothing.
    func locate(_ executable: String) -> String?
}

extension ProcessRunner {
    public func locate(_ executable: String) -> String? { nil }

    /// Runs `command` and throws `ProcessError.nonZeroExit` unless it exits 0.
    public func checked(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        let output = try await run(command, timeout: timeout)
        guard output.status == 0 else { throw ProcessError.nonZeroExit(command: command, output: output) }
        return output
    }
}

extension Duration {
    /// "1.5 s", "90 s" — for messages.
    public var formattedSeconds: String {
        let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
        if seconds == seconds.rounded() { return "\(Int(seconds)) s" }
        return String(format: "%.1f s", seconds)
    }

    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
