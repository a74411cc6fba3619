import Foundation

/// A child process kept running while its parent talks to it: bytes to its stdin, lines from its
/// stdout. For helpers that serve several requests (pymobiledevice3's, one per device per run).
///
/// Closing stdin is how a session is asked to end; `stop` then waits a moment and ends it by signal.
/// A session dropped without `stop` closes stdin and kills the child.
public protocol ProcessSession: AnyObject, Sendable {
    var processIdentifier: Int32 { get }
    /// Whether the child has not exited yet.
    var isRunning: Bool { get }
    /// Writes to the child's stdin. Throws when the child has closed it (it exited).
    func send(_ data: Data) throws
    /// The next line the child wrote to stdout (without its newline); nil once stdout has ended.
    /// Throws `ProcessSessionTimeout` when no line came within `timeout`, and `CancellationError`
    /// when the waiting task is cancelled: the session is left as it is in both cases.
    func nextLine(timeout: Duration) async throws -> String?
    /// The end of what the child wrote to stderr (at most the last 16 KB), for error messages.
    func standardErrorTail() -> String
    /// Closes stdin, gives the child `grace` to exit, then SIGTERM, then SIGKILL half a second later.
    /// Returns once the child has ended.
    func stop(grace: Duration) async
}

/// No line came from a session within the time asked for.
public struct ProcessSessionTimeout: Error, Sendable {
    public var after: Duration
}

/// A runner that can start a `ProcessSession` (the live one; test runners may not).
public protocol SessionStartingRunner: ProcessRunner {
    func startSession(_ command: ProcessCommand) throws -> any ProcessSession
}

extension ProcessRunner {
    /// Starts `command` as a session when this runner can keep a process running; otherwise throws
    /// `ProcessError.launchFailed` saying so. `command.standardInput`, when set, is written first and
    /// stdin stays open.
    public func session(_ command: ProcessCommand) throws -> any ProcessSession {
        guard let runner = self as? any SessionStartingRunner else {
            throw ProcessError.launchFailed(
                command: command, reason: "\(type(of: self)) runs commands to completion only")
        }
        return try runner.startSession(command)
    }
}
