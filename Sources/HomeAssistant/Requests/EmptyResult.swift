/// The response of commands whose result is `null` (subscribe/unsubscribe, config saves).
public struct EmptyResult: Sendable, Hashable, Codable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {}
}
