/// A command waiting for its reply. It outlives a socket: after a reconnect it is sent again
/// under a new id.
struct PendingRequest {
    let type: String
    let parameters: [String: JSONValue]
    /// The id on the current socket; `nil` while not sent on it.
    var serverID: Int?
    /// Set when this command creates (or re-creates) a subscription.
    let subscriptionKey: Int?
    let complete: @Sendable (Result<CommandReply, HomeAssistantError>) -> Void
    var timeout: Task<Void, Never>?
}
