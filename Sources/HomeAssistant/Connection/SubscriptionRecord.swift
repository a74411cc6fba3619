import Foundation

/// One live subscription: the command that makes it (re-sent after a reconnect) and where its
/// events go.
struct SubscriptionRecord {
    let type: String
    let parameters: [String: JSONValue]
    /// The id of the subscribing command on the current socket; events carry it.
    var serverID: Int?
    /// HA confirmed it at least once; only confirmed subscriptions are re-made on reconnect
    /// (an unconfirmed one is still a pending request and is re-sent as such).
    var confirmed = false
    let deliver: @Sendable (Data) -> Void
    let finish: @Sendable (HomeAssistantError?) -> Void
}
