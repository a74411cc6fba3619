/// A failure talking to Home Assistant. `description` says what failed, on which server, and what
/// to do next. It never contains the token.
public struct HomeAssistantError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The URL is not a usable server URL.
        case invalidServerURL
        /// TCP, TLS or the WebSocket upgrade failed, or the server went away.
        case unreachable
        /// `auth_invalid` over WebSocket or HTTP 401 over REST.
        case tokenRefused
        /// No answer before the deadline.
        case timedOut
        /// HA answered `success: false` (`code` is HA's error code, e.g. `config_not_found`),
        /// or a REST call answered an unexpected HTTP status (`code` is `http_<status>`).
        case commandFailed(code: String)
        /// The answer could not be decoded.
        case invalidResponse
        /// The connection was closed by its owner, or not opened yet.
        case notConnected
        /// The caller's task was cancelled.
        case cancelled
    }

    public let kind: Kind
    /// The server as the user gave it (base URL).
    public let server: String
    /// The full sentence.
    public let message: String

    public init(_ kind: Kind, server: String, message: String) {
        self.kind = kind
        self.server = server
        self.message = message
    }

    public var description: String { message }

    /// HA's error code for `.commandFailed`, else `nil`.
    public var code: String? {
        if case .commandFailed(let code) = kind { return code }
        return nil
    }

    static func tokenRefused(_ server: String) -> HomeAssistantError {
        HomeAssistantError(
            .tokenRefused, server: server,
            message: "the token for \(server) was refused: create a new long-lived access token "
                + "(Home Assistant > your profile > Security) and pass it again")
    }

    static func unreachable(_ server: String, tried url: String, _ detail: String) -> HomeAssistantError {
        HomeAssistantError(
            .unreachable, server: server,
            message: "cannot reach Home Assistant at \(url): \(detail). Check the URL, the network, "
                + "and that Home Assistant is running")
    }

    static func timedOut(_ server: String, _ what: String, after timeout: Duration) -> HomeAssistantError {
        HomeAssistantError(
            .timedOut, server: server,
            message: "Home Assistant at \(server) did not answer \(what) within \(timeout.secondsText): "
                + "check that it is not overloaded, or raise the timeout")
    }

    static func notConnected(_ server: String) -> HomeAssistantError {
        HomeAssistantError(
            .notConnected, server: server,
            message: "the connection to \(server) is closed: call connect() before sending requests")
    }
}
