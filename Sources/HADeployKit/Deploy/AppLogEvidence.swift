import Foundation

/// What the HA Dashboard app's own log (`Documents/ha-log.txt`) says about its last launch.
///
/// The app appends `=== HA Dashboard log session ===` at each launch; a loaded dashboard shows
/// `[conn] Lovelace config received: …`; `Auth failed`, `fetch failed` and `=== CRASH:` are failures.
struct AppLogEvidence: Sendable {
    static let path = "Documents/ha-log.txt"
    static let header = "=== HA Dashboard log session ==="

    let sessionCount: Int
    let lastSession: String

    init(text: String) {
        let parts = text.components(separatedBy: Self.header)
        sessionCount = parts.count - 1
        lastSession = sessionCount > 0 ? parts.last ?? "" : ""
    }

    static func sessions(_ data: Data) -> Int {
        AppLogEvidence(text: String(decoding: data, as: UTF8.self)).sessionCount
    }

    /// true: loaded; false: failed; nil: nothing decisive yet. A dashboard without a saved config is
    /// loaded too: the app logs the failed fetch, then falls back to the generated dashboard.
    var verdict: Bool? {
        if lastSession.contains("=== CRASH:") || lastSession.contains("Auth failed") { return false }
        if lastSession.contains("Lovelace config received")
            || lastSession.contains("using original-states strategy")
        {
            return true
        }
        return lastSession.contains("fetch failed") ? false : nil
    }

    var lastSessionHighlights: [String] {
        lastSession.split(separator: "\n").map(String.init).filter {
            $0.contains("NSUserDefaults read END") || $0.contains("isConfigured=") || $0.contains("[conn]")
                || $0.contains("CRASH") || $0.hasPrefix("Device:")
        }
    }
}
