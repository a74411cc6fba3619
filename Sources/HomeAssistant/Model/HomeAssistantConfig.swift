/// The answer to `get_config` (WebSocket) or `GET /api/config` (REST), the fields hadeploy uses;
/// everything else is in ``raw``.
public struct HomeAssistantConfig: Sendable, Hashable, Decodable {
    public let version: String
    public let locationName: String?
    public let timeZone: String?
    public let components: [String]
    /// `RUNNING` once HA finished starting (`NOT_RUNNING`, `STARTING`, `STOPPING` otherwise).
    public let state: String?
    public let recoveryMode: Bool?
    public let raw: JSONValue

    enum CodingKeys: String, CodingKey {
        case version, components, state
        case locationName = "location_name"
        case timeZone = "time_zone"
        case recoveryMode = "recovery_mode"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        locationName = try container.decodeIfPresent(String.self, forKey: .locationName)
        timeZone = try container.decodeIfPresent(String.self, forKey: .timeZone)
        components = try container.decodeIfPresent([String].self, forKey: .components) ?? []
        state = try container.decodeIfPresent(String.self, forKey: .state)
        recoveryMode = try container.decodeIfPresent(Bool.self, forKey: .recoveryMode)
        raw = try JSONValue(from: decoder)
    }
}
