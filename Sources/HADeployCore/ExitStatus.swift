/// The exit codes hadeploy promises (sysexits-style where one exists).
public enum ExitStatus: Int32, Sendable {
    /// Every device succeeded.
    case success = 0
    /// At least one device failed, or a check found a difference (`render --check`).
    case failure = 1
    /// A build failed.
    case buildFailed = 2
    /// `status --publish`: the status was not published (the MQTT broker unreachable, the
    /// credentials refused, its TLS certificate not verified, no answer in time).
    case notPublished = 4
    /// The command line was wrong (EX_USAGE).
    case usage = 64
    /// A configuration file or `.env` was wrong (EX_CONFIG).
    case config = 78
    /// Stopped by Ctrl-C (SIGINT): 128 + 2, as a shell reports a process the signal ended.
    case interrupted = 130
    /// Stopped by SIGTERM (a CI job cancelled, a timeout): 128 + 15.
    case terminated = 143

    /// The status for a run stopped by `signal` (SIGINT or SIGTERM).
    public static func stopped(by signal: Int32) -> ExitStatus {
        signal == 15 ? .terminated : .interrupted
    }
}

/// An error that knows which exit code it should end the program with.
public protocol ExitStatusProviding: Error {
    var exitStatus: ExitStatus { get }
}
