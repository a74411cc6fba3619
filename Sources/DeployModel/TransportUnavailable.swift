import HADeployCore

/// A transport this host or this build cannot drive, with what to do instead.
public struct TransportUnavailable: Error, CustomStringConvertible, ExitStatusProviding {
    public var device: String
    public var transport: String
    public var reason: String

    public init(device: String, transport: String, reason: String) {
        self.device = device
        self.transport = transport
        self.reason = reason
    }

    public var description: String { "\(device): cannot use \(transport): \(reason)" }

    /// Only reaches the exit code when a command (not a deploy) stops on it: a configuration problem.
    public var exitStatus: ExitStatus { .config }
}
