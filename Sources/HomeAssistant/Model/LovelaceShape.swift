/// How many views and cards a dashboard has, counted the way the HA Dashboard app counts them when
/// it logs `Lovelace config received: N views, M cards, strategy=…`: the cards of each view plus
/// the cards of each view's sections; `strategy` is the strategy's type, or nil.
public struct LovelaceShape: Sendable, Hashable, Codable, CustomStringConvertible {
    public let views: Int
    public let cards: Int
    public let strategy: String?

    public init(views: Int, cards: Int, strategy: String?) {
        self.views = views
        self.cards = cards
        self.strategy = strategy
    }

    public init(_ config: LovelaceConfig) {
        var cards = 0
        for view in config.views {
            cards += view["cards"]?.arrayValue?.count ?? 0
            for section in view["sections"]?.arrayValue ?? [] {
                cards += section["cards"]?.arrayValue?.count ?? 0
            }
        }
        views = config.views.count
        self.cards = cards
        strategy = config.value["strategy"]?["type"]?.stringValue
    }

    public var description: String {
        "\(views) views, \(cards) cards, strategy=\(strategy ?? "none")"
    }
}
