/// What a preflight found out about the dashboard.
public struct DashboardCheck: Sendable, Hashable, Codable {
    /// `nil` for the default dashboard.
    public var urlPath: String?
    /// HA knows the dashboard.
    public var exists: Bool = false
    /// It has a saved config (a dashboard never saved shows HA's auto-generated one).
    public var saved: Bool = false
    /// The storage dashboards HA has (the default dashboard is not among them).
    public var availableDashboards: [String] = []
    /// Entity references found in the config (one per place of use).
    public var referencedEntities: Int = 0
}
