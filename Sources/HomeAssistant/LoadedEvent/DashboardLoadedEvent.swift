/// The data of `ha_dashboard_loaded`, which the app fires once it has rendered its dashboard:
/// `{deploy_id, device, dashboard, version, build, kiosk}`.
public struct DashboardLoadedEvent: Sendable, Hashable, Codable {
    /// The event type of the contract.
    public static let eventType = "ha_dashboard_loaded"

    public let deployID: String
    public let device: String
    public let dashboard: String?
    public let version: String?
    public let build: String?
    public let kiosk: Bool?
    /// `time_fired` from HA.
    public let timeFired: String?

    enum CodingKeys: String, CodingKey {
        case device, dashboard, version, build, kiosk
        case deployID = "deploy_id"
        case timeFired = "time_fired"
    }

    public init(
        deployID: String, device: String, dashboard: String? = nil, version: String? = nil,
        build: String? = nil,
        kiosk: Bool? = nil, timeFired: String? = nil
    ) {
        self.deployID = deployID
        self.device = device
        self.dashboard = dashboard
        self.version = version
        self.build = build
        self.kiosk = kiosk
        self.timeFired = timeFired
    }

    /// Reads an event's data leniently (numbers for `build`, `"true"` for `kiosk`, as apps send
    /// them); `nil` without `deploy_id` or `device`.
    public init?(_ event: HomeAssistantEvent) {
        guard event.eventType == Self.eventType,
            let deployID = Self.text(event.data["deploy_id"]), let device = Self.text(event.data["device"])
        else { return nil }
        self.deployID = deployID
        self.device = device
        dashboard = Self.text(event.data["dashboard"])
        version = Self.text(event.data["version"])
        build = Self.text(event.data["build"])
        switch event.data["kiosk"] {
        case .bool(let value): kiosk = value
        case .string(let value): kiosk = ["true", "1", "yes", "on"].contains(value.lowercased())
        case .number(let value): kiosk = value != 0
        default: kiosk = nil
        }
        timeFired = event.timeFired
    }

    private static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let string): string
        case .number(let number): number.rounded() == number ? String(Int64(number)) : String(number)
        case .bool(let bool): String(bool)
        default: nil
        }
    }
}
