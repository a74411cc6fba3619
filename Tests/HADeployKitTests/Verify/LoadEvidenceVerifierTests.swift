import Foundation
import HomeAssistant
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployKit

/// The decision logic of the evidence check with in-process doubles for the container and Home
/// Assistant (each fails the test when asked for something it was not given). The real readers —
/// house_arrest against the twins, a real Home Assistant — are in the end-to-end tests.
struct LoadEvidenceVerifierTests {
    /// A container whose files are set by the test; a backend that cannot read it throws. Every
    /// other call is unexpected.
    final class Container: FakeDriver, @unchecked Sendable {
        let lock = NSLock()
        var files: [String: Data] = [:]
        var readable = true

        func write(_ path: String, _ text: String) { lock.withLock { files[path] = Data(text.utf8) } }

        override func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
            guard lock.withLock({ readable }) else { throw AppDataUnavailable("sealed container") }
            return lock.withLock { files[relativePath] }
        }
    }

    typealias Unexpected = FakeDriver.Unexpected

    struct Server: DashboardVerifier {
        var shapes: [String: ExpectedDashboard] = [:]
        var sensor: Sensor?

        actor Sensor: ActiveDashboardWatch {
            var value: String?
            func set(_ value: String?) { self.value = value }
            func reportedValue() async -> String? { value }
            func status() async -> String { "no report" }
        }

        func preflight(dashboards: [String?]) async throws -> [String] { throw Unexpected("preflight") }
        func expectLoaded(deployID: String, device: String) async throws -> any LoadedWaiter {
            throw Unexpected("expectLoaded")
        }
        func expectedDashboard(_ dashboard: String?) async throws -> ExpectedDashboard {
            guard let shape = shapes[dashboard ?? ""] else {
                throw Unexpected("dashboard \(dashboard ?? "")")
            }
            return shape
        }
        func watchActiveDashboard(deviceName: String, deployID: String) async -> any ActiveDashboardWatch {
            if let sensor { return sensor }
            Issue.record("no sensor expected for \(deviceName)")
            return Sensor()
        }
    }

    static let artifact = Artifact(
        path: "/dev/null", bundleID: "com.example.hadashboard", executable: "HADashboard",
        marketingVersion: "1",
        buildNumber: "1", flavour: "modern", archs: ["arm64"])

    static func session(_ lines: [String]) -> String {
        "\n=== HA Dashboard log session ===\nDevice: iPad / iOS 15.8\nDate: 2026-11-23 10:00:00 +0000\n"
            + "Min level: INFO\n\n" + lines.map { "+    10.0ms  INFO [conn] \($0)\n" }.joined()
    }

    func verifier(
        _ driver: Container, _ server: Server, dashboard: String?? = .some("dashboard-hall"),
        integration: Bool = false, timeout: Duration = .seconds(5)
    ) -> LoadEvidenceVerifier {
        LoadEvidenceVerifier(
            driver: driver, verifier: server,
            request: LoadEvidenceVerifier.Request(
                artifact: Self.artifact, dashboard: dashboard, deviceName: "Hall iPad",
                homeAssistantIntegration: integration, deployID: "D1", timeout: timeout),
            clock: TestHost.clock, pollInterval: .milliseconds(50))
    }

    @Test func anOldSessionWithTheRightShapeDoesNotCountAndTheNewOneDoes() async throws {
        let driver = Container()
        let old = Self.session([
            "WebSocket authenticated", "Lovelace config received: 2 views, 3 cards, strategy=none",
        ])
        driver.write(AppLogBaseline.current, old)
        let server = Server(shapes: [
            "dashboard-hall": .shape(LovelaceShape(views: 2, cards: 3, strategy: nil))
        ])
        let check = verifier(driver, server, timeout: .milliseconds(400))
        let prepared = await check.prepare()
        let stale = await check.wait(prepared, launchedAt: Date())
        guard case .notLoaded(let reason) = stale.verification else {
            Issue.record("the previous launch's session must not count: \(stale.verification)")
            return
        }
        #expect(reason.contains("no log session started after the launch"), "\(reason)")

        driver.write(
            AppLogBaseline.current,
            old
                + Self.session([
                    "WebSocket authenticated", "Lovelace config received: 2 views, 3 cards, strategy=none",
                ]))
        let fresh = await check.wait(prepared, launchedAt: Date())
        #expect(fresh.evidence == [.appLog])
    }

    /// 1.3 writes `[startup] App version: <version> (<build>)` at every launch: a session of another
    /// build is not the installed one loading, however well it loads; the installed one verifies.
    @Test func aSessionOfAnotherBuildIsNotTheInstalledOne() async throws {
        let driver = Container()
        let server = Server(shapes: [
            "dashboard-hall": .shape(LovelaceShape(views: 2, cards: 3, strategy: nil))
        ])
        let check = verifier(driver, server, timeout: .seconds(5))
        let prepared = await check.prepare()
        func session(_ version: String) -> String {
            "\n=== HA Dashboard log session ===\nDevice: iPad / iOS 15.8\nDate: 2026-11-23 10:00:00 +0000\n"
                + "Min level: INFO\n\n+     1.0ms  INFO [startup] App version: \(version)\n"
                + "+    10.0ms  INFO [conn] Lovelace config received: 2 views, 3 cards, strategy=none\n"
        }
        driver.write(AppLogBaseline.current, session("1.2.6 (280)"))
        let began = ContinuousClock.now
        let old = await check.wait(prepared, launchedAt: Date())
        #expect(ContinuousClock.now - began < .seconds(3), "the app's own words end the wait")
        guard case .notLoaded(let reason) = old.verification else {
            Issue.record("another build must not verify: \(old.verification)")
            return
        }
        #expect(
            reason.contains("App version: 1.2.6 (280)") && reason.contains("installed, 1 (1)"), "\(reason)")
        driver.write(AppLogBaseline.current, session("1 (1)"))
        #expect(await check.wait(prepared, launchedAt: Date()).evidence == [.appLog])
    }

    @Test func anotherDashboardsShapeIsNotTheAskedOne() async throws {
        let driver = Container()
        let server = Server(shapes: [
            "dashboard-hall": .shape(LovelaceShape(views: 2, cards: 3, strategy: nil))
        ])
        let check = verifier(driver, server, timeout: .milliseconds(400))
        let prepared = await check.prepare()
        driver.write(
            AppLogBaseline.current,
            Self.session(["Lovelace config received: 1 views, 4 cards, strategy=none"]))
        let outcome = await check.wait(prepared, launchedAt: Date())
        guard case .notLoaded(let reason) = outcome.verification else {
            Issue.record("a different shape must not verify")
            return
        }
        #expect(reason.contains("1 views, 4 cards, strategy=none"), "\(reason)")
        #expect(reason.contains("dashboard 'dashboard-hall' has 2 views, 3 cards"), "\(reason)")
    }

    @Test func aSealedContainerWithoutIntegrationIsUnverifiedAtOnce() async throws {
        let driver = Container()
        driver.readable = false
        let check = verifier(
            driver, Server(shapes: ["dashboard-hall": .generatedDefault]), timeout: .seconds(30))
        let began = ContinuousClock.now
        let outcome = await check.wait(await check.prepare(), launchedAt: Date())
        #expect(ContinuousClock.now - began < .seconds(2))
        guard case .skipped(let reason) = outcome.verification else {
            Issue.record("expected skipped, got \(outcome.verification)")
            return
        }
        #expect(reason.contains("sealed container") && reason.contains("ha_integration"))
    }

    @Test func withASealedContainerTheSensorDecides() async throws {
        let driver = Container()
        driver.readable = false
        let sensor = Server.Sensor()
        let server = Server(shapes: ["dashboard-hall": .generatedDefault], sensor: sensor)
        let check = verifier(driver, server, integration: true, timeout: .seconds(3))
        let prepared = await check.prepare()
        let waiting = Task { await check.wait(prepared, launchedAt: Date()) }
        try await Task.sleep(for: .milliseconds(200))
        await sensor.set("dashboard-hall")
        let outcome = await waiting.value
        #expect(outcome.evidence == [.homeAssistant])
    }

    @Test func withoutADashboardSentTheAppsOwnSettingIsExpected() async throws {
        let driver = Container()
        let settings = try PropertyListSerialization.data(
            fromPropertyList: ["ha_selected_dashboard": "dashboard-office"], format: .binary, options: 0)
        driver.lock.withLock { driver.files["Library/Preferences/com.example.hadashboard.plist"] = settings }
        let server = Server(shapes: [
            "dashboard-office": .shape(LovelaceShape(views: 1, cards: 1, strategy: nil))
        ])
        let check = verifier(driver, server, dashboard: .none)
        let prepared = await check.prepare()
        driver.write(
            AppLogBaseline.current,
            Self.session(["Lovelace config received: 1 views, 1 cards, strategy=none"]))
        #expect(await check.wait(prepared, launchedAt: Date()).evidence == [.appLog])
    }
}
