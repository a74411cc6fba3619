/// One state object from `get_states`, `GET /api/states` or a `state_changed` event.
public struct EntityState: Sendable, Hashable, Codable {
    public let entityID: String
    public let state: String
    public let attributes: [String: JSONValue]
    public let lastChanged: String?
    public let lastUpdated: String?

    enum CodingKeys: String, CodingKey {
        case state, attributes
        case entityID = "entity_id"
        case lastChanged = "last_changed"
        case lastUpdated = "last_updated"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entityID = try container.decode(String.self, forKey: .entityID)
        state = try container.decode(String.self, forKey: .state)
        attributes = try container.decodeIfPresent([String: JSONValue].self, forKey: .attributes) ?? [:]
        lastChanged = try container.decodeIfPresent(String.self, forKey: .lastChanged)
        lastUpdated = try container.decodeIfPresent(String.self, forKey: .lastUpdated)
    }

    /// `friendly_name`, when set.
    public var friendlyName: String? { attributes["friendly_name"]?.stringValue }
}
