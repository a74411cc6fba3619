/// An entity a dashboard config names, and where: `views[0].cards[2].entities[1]`.
public struct EntityReference: Sendable, Hashable, Codable {
    public let entityID: String
    public let path: String
}
