import Foundation
import HADeployCore

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

    /// What a rollback's relaunch shows: reads the log (`read`) until a session newer than the
    /// `before` ones shows the dashboard loaded or failing, or `timeout` seconds have passed. A
    /// failure seen twice is final: the app logs a failed fetch just before its fallback.
    static func relaunch(
        after before: Int, timeout: Double, clock: any WallClock, read: () async throws -> Data?
    ) async throws -> (evidence: [String], loaded: Bool) {
        let deadline = clock.deadline(after: .checkedSeconds(timeout))
        var evidence = AppLogEvidence(text: "")
        var failedBefore = false
        while clock.instant() < deadline {
            if let data = try await read() {
                evidence = AppLogEvidence(text: String(decoding: data, as: UTF8.self))
                let verdict = evidence.sessionCount > before ? evidence.verdict : nil
                if verdict == true || (verdict == false && failedBefore) { break }
                failedBefore = verdict == false
            }
            try await clock.sleep(for: .milliseconds(500))
        }
        let fresh = evidence.sessionCount > before
        return (fresh ? evidence.lastSessionHighlights : [], fresh && evidence.verdict == true)
    }
}
