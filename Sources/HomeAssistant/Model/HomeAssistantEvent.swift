/// One event from an event subscription (`subscribe_events`).
public struct HomeAssistantEvent: Sendable, Hashable, Codable {
    public let eventType: String
    public let data: JSONValue
    public let origin: String?
    public let timeFired: String?
    public let context: JSONValue?

    enum CodingKeys: String, CodingKey {
        case data, origin, context
        case eventType = "event_type"
        case timeFired = "time_fired"
    }

    public init(
        eventType: String, data: JSONValue, origin: String? = nil, timeFired: String? = nil,
        context: JSONValue? = nil
    ) {
        self.eventType = eventType
        self.data = data
        self.origin = origin
        self.timeFired = timeFired
        self.context = context
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        eventType = try container.decode(String.self, forKey: .eventType)
        data = try container.decodeIfPresent(JSONValue.self, forKey: .data) ?? .object([:])
        origin = try container.decodeIfPresent(String.self, forKey: .origin)
        timeFired = try container.decodeIfPresent(String.self, forKey: .timeFired)
        context = try container.decodeIfPresent(JSONValue.self, forKey: .context)
    }
}
