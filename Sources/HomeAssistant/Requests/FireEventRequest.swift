/// `fire_event` (admin only). The result holds the event's context.
public struct FireEventRequest: HomeAssistantRequest {
    public typealias Response = JSONValue
    public var type: String { "fire_event" }
    public let eventType: String
    public let data: [String: JSONValue]?

    public init(eventType: String, data: [String: JSONValue]? = nil) {
        self.eventType = eventType
        self.data = data
    }

    public var parameters: [String: JSONValue] {
        var parameters: [String: JSONValue] = ["event_type": .string(eventType)]
        if let data { parameters["event_data"] = .object(data) }
        return parameters
    }
}
