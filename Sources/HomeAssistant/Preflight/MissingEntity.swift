/// An entity the dashboard references that `get_states` does not have, with every place it is used.
public struct MissingEntity: Sendable, Hashable, Codable {
    public let entityID: String
    /// Card paths such as `views[0].cards[2].entities[1]`, in document order.
    public let usedAt: [String]
}
