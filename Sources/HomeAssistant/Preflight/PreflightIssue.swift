/// One finding of a preflight. Errors fail the preflight; warnings do not.
public struct PreflightIssue: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable, Codable {
        case error, warning
    }

    public let severity: Severity
    /// Stable machine-readable code: `unreachable`, `token_refused`, `timed_out`, `stalled`, `request_failed`,
    /// `dashboard_not_found`, `dashboard_not_saved`, `dashboard_not_parsed`, `entity_missing`.
    public let code: String
    public let message: String

    public init(_ severity: Severity, code: String, message: String) {
        self.severity = severity
        self.code = code
        self.message = message
    }

    public var description: String { "\(severity): \(message)" }
}
