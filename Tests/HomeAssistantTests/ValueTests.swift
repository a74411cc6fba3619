import Foundation
import HomeAssistant
import Testing

@Suite("Values")
struct ValueTests {
    @Test("backoff doubles up to the maximum")
    func backoff() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1))
        #expect(policy.delay(forAttempt: 0) == .milliseconds(100))
        #expect(policy.delay(forAttempt: 1) == .milliseconds(200))
        #expect(policy.delay(forAttempt: 3) == .milliseconds(800))
        #expect(policy.delay(forAttempt: 4) == .seconds(1))
        #expect(policy.delay(forAttempt: 1000) == .seconds(1))
    }

    @Test("outcomes encode as JSON a script can read")
    func outcomeJSON() throws {
        let event = DashboardLoadedEvent(
            deployID: "d1", device: "ipad2", dashboard: "wall-kitchen", kiosk: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let loaded = String(
            decoding: try encoder.encode(DashboardLoadOutcome.loaded(after: .milliseconds(1500), event)),
            as: UTF8.self)
        #expect(loaded.contains(#""status":"loaded""#))
        #expect(loaded.contains(#""after_seconds":1.5"#))
        #expect(loaded.contains(#""deploy_id":"d1""#))
        let reason = NotLoadedReason.appCrashed("SIGSEGV")
        let notLoaded = try encoder.encode(DashboardLoadOutcome.notLoaded(reason))
        #expect(try JSONDecoder().decode(DashboardLoadOutcome.self, from: notLoaded) == .notLoaded(reason))
    }

    @Test("the loaded event is read leniently")
    func lenientEvent() {
        let event = HomeAssistantEvent(
            eventType: "ha_dashboard_loaded",
            data: ["deploy_id": "abc", "device": "ipad2", "build": 42, "kiosk": "true", "version": "1.2.3"])
        let loaded = DashboardLoadedEvent(event)
        #expect(loaded?.build == "42")
        #expect(loaded?.kiosk == true)
        #expect(
            DashboardLoadedEvent(HomeAssistantEvent(eventType: "ha_dashboard_loaded", data: ["device": "x"]))
                == nil)
    }
}
