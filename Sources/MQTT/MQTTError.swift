/// A failure talking to an MQTT broker: one line that says what failed, at which broker, and what to
/// do next. It never holds the password.
public struct MQTTError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The broker URL (or a topic) is not usable: a configuration mistake.
        case invalidConfiguration
        /// TCP did not connect, or the broker went away.
        case unreachable
        /// The broker refused the CONNECT (CONNACK return code 1–5).
        case refused(code: UInt8)
        /// The TLS handshake failed: the certificate did not verify, or the broker speaks no TLS.
        case tls
        /// No answer within the step's deadline.
        case timedOut
        /// The broker sent something MQTT 3.1.1 does not allow here.
        case protocolViolation
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// Credentials refused (CONNACK 4 or 5): the user must fix the user name or password.
    public var isCredentialsRefused: Bool {
        if case .refused(let code) = kind { return code == 4 || code == 5 }
        return false
    }
}
