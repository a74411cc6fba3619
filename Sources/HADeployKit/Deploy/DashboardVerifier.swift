import DeployModel
import Foundation

/// The Home Assistant side of a deploy: checked once before, and per device after the launch.
public protocol DashboardVerifier: Sendable {
    /// Server reachable, token accepted, dashboards present; throws with the reason otherwise.
    /// `nil` is the default dashboard. Returns human-readable notes (HA version, missing entities).
    func preflight(dashboards: [String?]) async throws -> [String]
    /// Subscribes to `ha_dashboard_loaded` for this deploy and device; call before launching.
    func expectLoaded(deployID: String, device: String) async throws -> any LoadedWaiter
    /// What the app should show for `dashboard` (nil = the default), to confirm its log.
    func expectedDashboard(_ dashboard: String?) async throws -> ExpectedDashboard
    /// Starts watching the `active_dashboard` sensor of the mobile_app device named `deviceName`;
    /// call before the launch, so that an unchanged value still counts as reported.
    func watchActiveDashboard(deviceName: String, deployID: String) async -> any ActiveDashboardWatch
    /// Why the preflight found `dashboard` (nil = the default) unusable, or nil: only the devices
    /// that show it fail; a run stops only for what every device needs (the server, the token).
    func refusal(forDashboard dashboard: String?) async -> String?
}

extension DashboardVerifier {
    public func refusal(forDashboard dashboard: String?) async -> String? { nil }
}

/// A subscription waiting for one device's loaded event.
public protocol LoadedWaiter: Sendable {
    func wait(timeout: Duration) async -> Verification
    func cancel() async
}
