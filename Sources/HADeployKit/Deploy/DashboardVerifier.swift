import Foundation

/// The Home Assistant side of a deploy: checked once before, and per device after the launch.
public protocol DashboardVerifier: Sendable {
    /// Server reachable, token accepted, dashboards present; throws with the reason otherwise.
    /// `nil` is the default dashboard. Returns human-readable notes (HA version, missing entities).
    func preflight(dashboards: [String?]) async throws -> [String]
    /// Subscribes to `ha_dashboard_loaded` for this deploy and device; call before launching.
    func expectLoaded(deployID: String, device: String) async throws -> any LoadedWaiter
    /// Decides from the evidence the app itself leaves — its log read through `driver`, its
    /// `mobile_app` entry — whether `device` loaded its dashboard after `launchedAt`.
    func verifyLoaded(
        device: DevicePlan, driver: any DeviceDriver, artifact: Artifact, launchedAt: Date, timeout: Duration
    ) async -> Verification
}

/// A subscription waiting for one device's loaded event.
public protocol LoadedWaiter: Sendable {
    func wait(timeout: Duration) async -> Verification
    func cancel() async
}
