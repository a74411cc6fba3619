/// What proved that a device loaded its dashboard.
public enum LoadEvidence: String, Sendable, Hashable, Codable {
    /// The app's own `ha-log.txt`: a session started after the launch received the dashboard
    /// Home Assistant has under that name (same views and cards).
    case appLog = "app log"
    /// The app's mobile_app device reported `active_dashboard` after the launch.
    case homeAssistant = "Home Assistant"
    /// An app build that fires `ha_dashboard_loaded` did so for this deploy.
    case event = "ha_dashboard_loaded event"
}
