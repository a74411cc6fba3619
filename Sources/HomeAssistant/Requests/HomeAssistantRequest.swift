/// A typed WebSocket command. The connection adds the `id`; ``type`` and ``parameters`` make the rest
/// of the message. Define your own for commands this library does not cover, or use ``RawRequest``.
public protocol HomeAssistantRequest: Sendable {
    associatedtype Response: Sendable
    /// The command's `type`, e.g. `get_states`.
    var type: String { get }
    /// The command's other members (never `id` or `type`).
    var parameters: [String: JSONValue] { get }
    /// Turns HA's successful reply into the response value.
    static func decodeResponse(from reply: CommandReply) throws -> Response
}

extension HomeAssistantRequest {
    public var parameters: [String: JSONValue] { [:] }
}

extension HomeAssistantRequest where Response: Decodable {
    public static func decodeResponse(from reply: CommandReply) throws -> Response {
        try reply.decodeResult(Response.self)
    }
}
