/// Which dashboard a preflight checks.
public enum DashboardSelection: Sendable, Hashable, Codable {
    /// Only the server, the token and the version.
    case none
    /// The default dashboard (`lovelace/config` without url_path).
    case defaultDashboard
    /// A dashboard by url_path (`wall-kitchen`).
    case named(String)

    /// The url_path, or `nil` for the default dashboard.
    var urlPath: String? {
        if case .named(let path) = self { return path }
        return nil
    }

    var displayName: String {
        switch self {
        case .none: "none"
        case .defaultDashboard: "the default dashboard"
        case .named(let path): "dashboard '\(path)'"
        }
    }
}
