import HomeAssistant

/// What the app's dashboard shows, as text lines for the virtual screen: each view's title and its
/// cards (type and title or first entity), so a screenshot shows which dashboard was loaded.
enum DashboardScreen {
    static let maximumLines = 34

    static func lines(config: LovelaceConfig, dashboard: String?, states: [EntityState]) -> [String] {
        let shape = LovelaceShape(config)
        var lines = [
            config.value["title"]?.stringValue ?? dashboard ?? "Home",
            "\(shape.views) views, \(shape.cards) cards" + (shape.strategy.map { " (\($0))" } ?? ""), "",
        ]
        for view in config.views {
            lines.append("# " + (view["title"]?.stringValue ?? view["path"]?.stringValue ?? "View"))
            var cards = view["cards"]?.arrayValue ?? []
            for section in view["sections"]?.arrayValue ?? [] { cards += section["cards"]?.arrayValue ?? [] }
            for card in cards { lines.append("  [" + describe(card, states: states) + "]") }
        }
        return Array(lines.prefix(maximumLines))
    }

    /// The fallback the app builds from the entities when there is no config to show.
    static func generated(dashboard: String?, states: [EntityState]) -> [String] {
        var lines = ["Home (generated)", "\(states.count) entities", ""]
        let domains = Dictionary(grouping: states) { $0.entityID.split(separator: ".").first.map(String.init) ?? "" }
        for domain in domains.keys.sorted() {
            lines.append("# " + domain)
            for state in domains[domain, default: []].prefix(4) {
                lines.append("  [\(state.friendlyName ?? state.entityID): \(state.state)]")
            }
        }
        if let dashboard { lines.insert("'\(dashboard)' not loaded", at: 1) }
        return Array(lines.prefix(maximumLines))
    }

    static func describe(_ card: JSONValue, states: [EntityState]) -> String {
        let type = card["type"]?.stringValue ?? "card"
        if let title = card["title"]?.stringValue ?? card["name"]?.stringValue { return "\(type): \(title)" }
        let entity =
            card["entity"]?.stringValue ?? card["entities"]?.arrayValue?.first?.stringValue
            ?? card["entities"]?.arrayValue?.first?["entity"]?.stringValue
        if let entity {
            let value = states.first { $0.entityID == entity }?.state
            return "\(type): \(entity)" + (value.map { " = \($0)" } ?? "")
        }
        return type
    }
}
