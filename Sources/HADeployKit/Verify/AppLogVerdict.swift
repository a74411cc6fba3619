import HomeAssistant

/// What one session of the app's log says about the launch.
public enum AppLogVerdict: Sendable, Hashable {
    /// `Lovelace config received: N views, M cards, strategy=…` (the last one in the session).
    case received(LovelaceShape)
    /// The default dashboard was never saved on the server: the app shows the dashboard Home
    /// Assistant generates ("No Lovelace config — using original-states strategy").
    case generatedDefault
    /// The app's own words for a launch that did not load the dashboard (`Auth failed: …`,
    /// `Lovelace config fetch failed: …`, `=== CRASH: …`, `isConfigured=NO`).
    case failed(String)
    /// Nothing decisive yet; the last entry, for the reason if the wait runs out.
    case waiting(last: String?)

    /// Reads a session: a crash ends it whatever came before; otherwise the last decisive entry
    /// counts (a token refused and then refreshed still loads).
    public static func of(_ session: AppLogSession) -> AppLogVerdict {
        if let crash = session.entries.first(where: { $0.hasPrefix("=== CRASH:") }) {
            let title = crash.split(separator: "\n").first.map(String.init) ?? crash
            let reason = crash.split(separator: "\n").first { $0.hasPrefix("Reason: ") }
            return .failed("the app crashed: " + title + (reason.map { " " + $0 } ?? ""))
        }
        var verdict = AppLogVerdict.waiting(last: session.entries.last)
        var fetchFailure: String?
        for entry in session.entries {
            let message = entry.drop { $0 != "]" }.dropFirst().drop { $0 == " " }
            if entry.hasPrefix("[startup] isConfigured=NO") {
                verdict = .failed(
                    "isConfigured=NO: the app has no server and token and shows its login screen")
            } else if message.hasPrefix("Auth failed") {
                verdict = .failed(Self.words(message))
            } else if message.hasPrefix("Lovelace config received: "), let shape = Self.shape(message) {
                verdict = .received(shape)
                fetchFailure = nil
            } else if message.hasPrefix("Lovelace config fetch failed") {
                fetchFailure = Self.words(message)
                verdict = .failed(fetchFailure! + " (the app fell back to its generated entity dashboard)")
            } else if message.hasPrefix("No Lovelace config — using original-states strategy") {
                // The same path serves a dashboard that does not exist ("Unknown config specified")
                // and a default dashboard nobody saved ("No config found.").
                if let failure = fetchFailure, failure.contains("No config found") {
                    verdict = .generatedDefault
                }
            } else if message.hasPrefix("Lovelace fetch failed") {
                verdict = .failed(
                    (fetchFailure.map { $0 + "; " } ?? "") + Self.words(message))
            }
        }
        return verdict
    }

    /// `[startup] App version: 1.3.0 (284)`, which the app writes at every launch since 1.3: the
    /// version and build that ran (nil for an older app, or a session without it).
    public static func appVersion(in session: AppLogSession) -> (version: String, build: String)? {
        let prefix = "[startup] App version: "
        guard let entry = session.entries.first(where: { $0.hasPrefix(prefix) }) else { return nil }
        let text = entry.dropFirst(prefix.count).split(separator: "\n").first ?? ""
        guard let open = text.lastIndex(of: "("), text.hasSuffix(")") else { return nil }
        let version = text[..<open].trimmingCharacters(in: .whitespaces)
        let build = text[text.index(after: open)..<text.index(before: text.endIndex)]
        guard !version.isEmpty, !build.isEmpty else { return nil }
        return (version, String(build))
    }

    /// An entry as one line: a multi-line NSDictionary becomes `{code = "x"; message = "y";}`.
    static func words(_ message: Substring) -> String {
        message.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// `Lovelace config received: 3 views, 12 cards, strategy=none`.
    static func shape(_ message: Substring) -> LovelaceShape? {
        let text = message.dropFirst("Lovelace config received: ".count)
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count >= 3, let views = Int(parts[0].split(separator: " ").first ?? ""),
            let cards = Int(parts[1].split(separator: " ").first ?? ""), parts[2].hasPrefix("strategy=")
        else { return nil }
        let strategy = String(parts[2].dropFirst("strategy=".count))
        return LovelaceShape(views: views, cards: cards, strategy: strategy == "none" ? nil : strategy)
    }
}
