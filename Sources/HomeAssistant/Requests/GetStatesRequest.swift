/// `get_states`: every entity's state. One frame of ~350 bytes per entity.
public struct GetStatesRequest: HomeAssistantRequest {
    public typealias Response = [EntityState]
    public var type: String { "get_states" }
    public init() {}
}
