/// `subscribe_events`, for one event type or (nil) all of them. Sent by
/// ``HomeAssistantConnection/subscribe(to:)``, which returns the events as an `AsyncSequence`;
/// any event type outside HA's allowlist needs an admin token.
public struct SubscribeEventsRequest: HomeAssistantRequest {
    public typealias Response = EmptyResult
    public var type: String { "subscribe_events" }
    public let eventType: String?

    public init(eventType: String?) { self.eventType = eventType }

    public var parameters: [String: JSONValue] {
        eventType.map { ["event_type": .string($0)] } ?? [:]
    }
}
