/// One item of `lovelace/dashboards/list` (storage-mode dashboards other than the default one).
public struct LovelaceDashboard: Sendable, Hashable, Codable {
    /// The id `update`/`delete` take: the url_path with `_` for `-` (`wall_kitchen`).
    public let id: String
    /// What the app and `lovelace/config` use (`wall-kitchen`). HA requires a hyphen in it.
    public let urlPath: String
    public let title: String?
    public let icon: String?
    public let mode: String?
    public let requireAdmin: Bool?
    public let showInSidebar: Bool?

    enum CodingKeys: String, CodingKey {
        case id, title, icon, mode
        case urlPath = "url_path"
        case requireAdmin = "require_admin"
        case showInSidebar = "show_in_sidebar"
    }
}
