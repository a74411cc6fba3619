/// The result of a ``Preflight``: what `hadeploy verify` prints (as JSON with `--json`).
public struct PreflightReport: Sendable, Hashable, Codable {
    /// The server's base URL.
    public var server: String
    /// The URL the client tried to connect to.
    public var webSocketURL: String
    public var reachable = false
    public var tokenAccepted = false
    public var homeAssistantVersion: String?
    /// Set when a dashboard was to be checked.
    public var dashboard: DashboardCheck?
    /// Entities `get_states` returned.
    public var entityCount: Int?
    public var missingEntities: [MissingEntity] = []
    public var issues: [PreflightIssue] = []
    /// No issue of severity error.
    public var passed = false
    public var durationSeconds: Double = 0

    public init(server: String, webSocketURL: String) {
        self.server = server
        self.webSocketURL = webSocketURL
    }

    public var errors: [PreflightIssue] { issues.filter { $0.severity == .error } }
    public var warnings: [PreflightIssue] { issues.filter { $0.severity == .warning } }
}
