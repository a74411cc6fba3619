/// `get_services`: domain → service name → description (fields, target, …).
public struct GetServicesRequest: HomeAssistantRequest {
    public typealias Response = [String: [String: JSONValue]]
    public var type: String { "get_services" }
    public init() {}
}
