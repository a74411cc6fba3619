/// `ping`: HA answers `{"type":"pong"}` with the same id (not a `result`).
public struct PingRequest: HomeAssistantRequest {
    public typealias Response = EmptyResult
    public var type: String { "ping" }
    public init() {}

    public static func decodeResponse(from reply: CommandReply) throws -> EmptyResult { EmptyResult() }
}
