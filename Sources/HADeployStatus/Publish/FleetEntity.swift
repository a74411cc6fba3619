import DeployModel
import Foundation

/// One Home Assistant entity of a device: its MQTT discovery component, what it is, and how its state
/// is read from a status.
struct FleetEntity: Sendable {
    var key: String
    var component: String
    var name: String
    var deviceClass: String?
    var unit: String?
    var stateClass: String?
    var icon: String?
    var entityCategory: String?
    /// Published whatever the device answered (whether it answered): no availability topic.
    var alwaysAvailable = false
    /// JSON attributes on `<state topic>/attributes`.
    var attributes = false
    /// The state payload: ``unknown`` or ``unknownText`` when the fact was not measured.
    var state: @Sendable (PublishedDevice) -> String

    /// `None`: Home Assistant's "unknown" for binary sensors and for sensors with a unit or a device
    /// class (numbers, timestamps).
    static let unknown = "None"
    /// A sensor with neither (plain text) keeps `None` as its text in Home Assistant 2024.3; the state
    /// `unknown` is Home Assistant's own "unknown" (what the frontend, `has_value` and automations see).
    static let unknownText = "unknown"

    /// A timestamp: Home Assistant 2024.3 parses every state of one as a time, and `None` (or an empty
    /// payload) gets a warning in its log at each publish. Such an entity has its own availability as
    /// well (`<key>/available`, `offline` when the time is not known), and no state then.
    var ownAvailability: Bool { deviceClass == "timestamp" }

    static func onOff(_ value: Bool?) -> String { value.map { $0 ? "ON" : "OFF" } ?? unknown }

    static func timestamp(_ date: Date?) -> String {
        guard let date else { return unknown }
        return date.formatted(.iso8601)
    }

    /// Home Assistant keeps at most 255 characters of a state.
    static func text(_ value: String?) -> String {
        guard let value else { return unknownText }
        return value.count <= 255 ? value : String(value.prefix(254)) + "…"
    }

    /// The entities every device gets, their states published in this order. Charging comes before
    /// the battery level: an automation triggered by the level that checks charging (the README's)
    /// then reads the charging state of the same status, not the last one.
    static let all: [FleetEntity] = [
        FleetEntity(
            key: "reachable", component: "binary_sensor", name: "Reachable", deviceClass: "connectivity",
            entityCategory: "diagnostic", alwaysAvailable: true, state: { onOff($0.status.reachable) }),
        FleetEntity(
            key: "attention", component: "binary_sensor", name: "Needs attention", deviceClass: "problem",
            attributes: true, state: { onOff(!$0.status.attention.isEmpty) }),
        FleetEntity(
            key: "needs_unlock", component: "binary_sensor", name: "Needs unlock", icon: "mdi:lock-alert",
            state: { onOff($0.status.reachable ? $0.status.needsUnlock : nil) }),
        FleetEntity(
            key: "charging", component: "binary_sensor", name: "Charging", deviceClass: "battery_charging",
            state: { onOff($0.status.battery.value?.charging) }),
        FleetEntity(
            key: "battery", component: "sensor", name: "Battery", deviceClass: "battery", unit: "%",
            stateClass: "measurement", state: { $0.status.battery.value.map { String($0.level) } ?? unknown }),
        FleetEntity(
            key: "storage_free", component: "sensor", name: "Storage free", deviceClass: "data_size",
            unit: "GB", stateClass: "measurement", icon: "mdi:harddisk",
            state: { device in
                device.status.storage.value.map { String(format: "%.2f", Double($0.availableBytes) / 1e9) }
                    ?? unknown
            }),
        FleetEntity(
            key: "last_boot", component: "sensor", name: "Last boot", deviceClass: "timestamp",
            entityCategory: "diagnostic", state: { timestamp($0.status.boot.value?.bootedAt) }),
        FleetEntity(
            key: "profile_expires", component: "sensor", name: "Profile expires", deviceClass: "timestamp",
            icon: "mdi:certificate", entityCategory: "diagnostic",
            state: { timestamp($0.status.profile.value??.expires) }),
        FleetEntity(
            key: "installed_build", component: "sensor", name: "Installed build", icon: "mdi:package-variant",
            state: { device in
                let status = device.status
                switch status.installed {
                case .known(let build?): return build.description
                case .known(nil): return "not installed"
                case .unavailable: return unknownText
                }
            }),
        FleetEntity(
            key: "planned_build", component: "sensor", name: "Planned build", icon: "mdi:package-up",
            state: { $0.status.expected.build.description }),
        FleetEntity(
            key: "build_matches", component: "binary_sensor", name: "Build matches",
            icon: "mdi:package-variant-closed-check",
            state: { device in
                let status = device.status
                switch status.build {
                case .upToDate: return "ON"
                case .outdated, .missing: return "OFF"
                case .unknown: return unknown
                }
            }),
        FleetEntity(
            key: "dashboard", component: "sensor", name: "Dashboard", icon: "mdi:view-dashboard",
            state: { text($0.status.dashboard.value?.summary) }),
        FleetEntity(
            key: "dashboard_loaded", component: "binary_sensor", name: "Dashboard loaded",
            icon: "mdi:view-dashboard-outline", state: { onOff($0.status.dashboard.value?.loaded) }),
        FleetEntity(
            key: "last_deploy", component: "sensor", name: "Last deploy", icon: "mdi:rocket-launch",
            state: { text(lastDeployOutcome($0)) }),
        FleetEntity(
            key: "last_deploy_time", component: "sensor", name: "Last deploy time", deviceClass: "timestamp",
            state: { timestamp($0.lastDeploy?.finishedAt ?? $0.status.lastDeployedAt) }),
        FleetEntity(
            key: "last_verified", component: "sensor", name: "Last verified", deviceClass: "timestamp",
            state: { timestamp($0.status.lastVerifiedAt) }),
    ]

    /// What the last deploy from here did: a deploy that proved the dashboard records that time as
    /// both its deploy and its verification.
    static func lastDeployOutcome(_ device: PublishedDevice) -> String {
        if let deploy = device.lastDeploy { return deploy.outcome }
        let status = device.status
        guard let deployed = status.lastDeployedAt else { return "no deploy from here" }
        if let verified = status.lastVerifiedAt, verified >= deployed {
            return "installed, dashboard verified"
        }
        return "installed, dashboard not verified"
    }
}
