/// Any command, for everything without a typed request (`lovelace/config/save`,
/// `lovelace/dashboards/create`, `call_service`, …). The response is the raw `result`.
public struct RawRequest: HomeAssistantRequest {
    public typealias Response = JSONValue
    public let type: String
    public let parameters: [String: JSONValue]

    public init(_ type: String, _ parameters: [String: JSONValue] = [:]) {
        self.type = type
        self.parameters = parameters.filter { $0.key != "id" && $0.key != "type" }
    }
}
