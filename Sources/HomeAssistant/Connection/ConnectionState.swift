/// Where a ``HomeAssistantConnection`` is in its life.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Not connected yet: call `connect()`.
    case idle
    /// Opening the socket and authenticating.
    case connecting
    /// Authenticated; requests flow.
    case connected
    /// The server went away; retrying with backoff (attempt counts from 1).
    case reconnecting(attempt: Int)
    /// Closed by its owner or after a fatal error (token refused on reconnect).
    case closed

    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting(let attempt): "reconnecting (attempt \(attempt))"
        case .closed: "closed"
        }
    }
}
