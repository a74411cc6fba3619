import Foundation
import HomeAssistant
import Testing

@testable import HADeployKit

/// The app's log, as HA Dashboard writes it (Fixtures/app-log), read the way the verifier reads it.
struct AppLogVerdictTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/app-log")

    func text(_ name: String) throws -> String {
        try String(contentsOf: Self.fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    func newest(_ name: String) throws -> AppLogSession {
        try #require(AppLogSession.sessions(in: try text(name)).last)
    }

    @Test func theNewestSessionCountsNotAnOlderFailure() throws {
        let sessions = AppLogSession.sessions(in: try text("loaded-after-old-failure.txt"))
        #expect(sessions.count == 2)
        #expect(sessions[1].device == "iPad / iOS 9.3.5")
        #expect(sessions[1].date == AppLogSession.parseDate("2026-11-23 09:02:11 +0000"))
        #expect(sessions[1].entries.contains("[startup] NSUserDefaults read END (url=YES, token=YES)"))
        #expect(sessions[1].entries.contains("[startup] saveServerURL BEGIN"))
        #expect(sessions[1].entries.contains("[conn] All registries loaded (floors: yes)"))
        #expect(AppLogVerdict.of(sessions[0]) == .failed("Auth failed: Authentication failed"))
        #expect(AppLogVerdict.of(sessions[1]) == .received(LovelaceShape(views: 2, cards: 5, strategy: nil)))
    }

    @Test func aRefusedTokenIsTheAppsOwnWords() throws {
        #expect(
            AppLogVerdict.of(try newest("auth-failed.txt")) == .failed("Auth failed: Authentication failed"))
    }

    @Test func aMissingDashboardIsTheFallbackWithHomeAssistantsMessage() throws {
        guard case .failed(let words) = AppLogVerdict.of(try newest("fell-back.txt")) else {
            Issue.record("expected a failure")
            return
        }
        #expect(words.contains("Lovelace config fetch failed"))
        #expect(words.contains("Unknown config specified: dashboard-lobby"))
        #expect(words.contains("fell back"))
    }

    @Test func anUnsavedDefaultDashboardIsTheGeneratedOne() throws {
        #expect(AppLogVerdict.of(try newest("default-generated.txt")) == .generatedDefault)
    }

    @Test func aCrashEndsItWithTheExceptionsReason() throws {
        guard case .failed(let words) = AppLogVerdict.of(try newest("crash.txt")) else {
            Issue.record("expected a failure")
            return
        }
        #expect(words.hasPrefix("the app crashed: === CRASH: Uncaught Exception ==="))
        #expect(words.contains("Reason: -[__NSCFNumber length]: unrecognized selector"))
    }

    @Test func stillStartingIsWaitingWithTheLastLine() {
        let text = """

            === HA Dashboard log session ===
            Device: iPad / iOS 15.8
            Date: 2026-11-23 09:40:00 +0000
            Min level: INFO

            +     3.0ms  INFO [log] Crash handler installed
            +   390.2ms  INFO [conn] WebSocket connected, awaiting auth...
            """
        let session = AppLogSession.sessions(in: text).last
        #expect(
            session.map(AppLogVerdict.of) == .waiting(last: "[conn] WebSocket connected, awaiting auth..."))
    }

    @Test func theBaselineKeepsOnlyWhatTheLaunchWrote() async throws {
        let old = try text("auth-failed.txt")
        let new = try text("loaded-after-old-failure.txt")
        let baseline = AppLogBaseline(Data(old.utf8))
        let grown = await baseline.newText(current: Data((old + new).utf8)) { nil }
        #expect(grown == new)
        // Nothing new since the launch: no session, even though the file holds two.
        let unchanged = await baseline.newText(current: Data(old.utf8)) { nil }
        #expect(baseline.newestSession(in: unchanged, launchedAt: Date()) == nil)
        // Rotated: the rest of ha-log-prev.txt, then the new current file (longer than the old one).
        let rotated = await baseline.newText(current: Data(new.utf8)) { Data((old + "tail\n").utf8) }
        #expect(rotated == "tail\n" + new)
    }

    @Test func withoutABaselineAHeaderFromBeforeTheLaunchDoesNotCount() throws {
        let text = try text("loaded-after-old-failure.txt")
        let unknown = AppLogBaseline(size: nil)
        let launch = try #require(AppLogSession.parseDate("2026-11-23 09:10:00 +0000"))
        #expect(unknown.newestSession(in: text, launchedAt: launch) == nil)
        let earlier = try #require(AppLogSession.parseDate("2026-11-23 09:02:00 +0000"))
        #expect(unknown.newestSession(in: text, launchedAt: earlier)?.date != nil)
    }

    @Test func theShapeIsCountedLikeTheApp() {
        let config = LovelaceConfig([
            "views": [
                ["title": "Home", "cards": [["type": "tile"], ["type": "entities"]]],
                ["title": "Sections", "sections": [["cards": [["type": "tile"]]], ["cards": []]]],
            ]
        ])
        #expect(LovelaceShape(config) == LovelaceShape(views: 2, cards: 3, strategy: nil))
        let strategy = LovelaceConfig(["strategy": ["type": "original-states"]])
        #expect(LovelaceShape(strategy).description == "0 views, 0 cards, strategy=original-states")
    }
}
