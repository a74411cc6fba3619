/// The app's `active_dashboard` sensor in Home Assistant, watched across one launch.
public protocol ActiveDashboardWatch: Sendable {
    /// The value the app reported since the launch, or nil while it has not (yet).
    func reportedValue() async -> String?
    /// Why there is no value, for the failure reason.
    func status() async -> String
}
