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
            for card in cards { lines += describe(card, states: states) }
        }
        return Array(lines.prefix(maximumLines))
    }

    /// The fallback the app builds from the entities when there is no config to show.
    static func generated(dashboard: String?, states: [EntityState]) -> [String] {
        var lines = ["Home (generated)", "\(states.count) entities", ""]
        let domains = Dictionary(grouping: states) {
            $0.entityID.split(separator: ".").first.map(String.init) ?? ""
        }
        for domain in domains.keys.sorted() {
            lines.append("# " + domain)
            for state in domains[domain, default: []].prefix(4) {
                lines.append("  [\(state.friendlyName ?? state.entityID): \(state.state)]")
            }
        }
        if let dashboard { lines.insert("'\(dashboard)' not loaded", at: 1) }
        return Array(lines.prefix(maximumLines))
    }

    /// A card as lines: `[Title]` or `[Name: state]`, an entities card's rows below it.
    static func describe(_ card: JSONValue, states: [EntityState]) -> [String] {
        func row(_ entity: String) -> String {
            guard let state = states.first(where: { $0.entityID == entity }) else { return entity }
            // The virtual screen's font is ASCII: "°C" is drawn as "C".
            let unit =
                state.attributes["unit_of_measurement"]?.stringValue.map { " " + $0.filter(\.isASCII) } ?? ""
            return "\(state.friendlyName ?? entity): \(state.state)\(unit)"
        }
        let entities = (card["entities"]?.arrayValue ?? []).compactMap {
            $0.stringValue ?? $0["entity"]?.stringValue
        }
        let title = card["title"]?.stringValue ?? card["name"]?.stringValue
        if let entity = card["entity"]?.stringValue {
            return ["  [" + (title.map { "\($0): " } ?? "") + row(entity) + "]"]
        }
        let heading = "  [" + (title ?? card["type"]?.stringValue ?? "card") + "]"
        return [heading] + entities.map { "    " + row($0) }
    }
}
