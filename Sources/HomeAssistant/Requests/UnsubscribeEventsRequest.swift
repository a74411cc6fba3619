/// `unsubscribe_events`: ends a subscription by the id of the command that made it.
public struct UnsubscribeEventsRequest: HomeAssistantRequest {
    public typealias Response = EmptyResult
    public var type: String { "unsubscribe_events" }
    public let subscription: Int

    public init(subscription: Int) { self.subscription = subscription }

    public var parameters: [String: JSONValue] { ["subscription": .number(Double(subscription))] }
}
