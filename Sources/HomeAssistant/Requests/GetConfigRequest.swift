/// `get_config`: version, location, loaded components, run state.
public struct GetConfigRequest: HomeAssistantRequest {
    public typealias Response = HomeAssistantConfig
    public var type: String { "get_config" }
    public init() {}
}
