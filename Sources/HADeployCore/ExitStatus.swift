/// The exit codes hadeploy promises (sysexits-style where one exists).
public enum ExitStatus: Int32, Sendable {
    /// Every device succeeded.
    case success = 0
    /// At least one device failed, or a check found a difference (`render --check`).
    case failure = 1
    /// A build failed.
    case buildFailed = 2
    /// The command line was wrong (EX_USAGE).
    case usage = 64
    /// A configuration file or `.env` was wrong (EX_CONFIG).
    case config = 78
}

/// An error that knows which exit code it should end the program with.
public protocol ExitStatusProviding: Error {
    var exitStatus: ExitStatus { get }
}
