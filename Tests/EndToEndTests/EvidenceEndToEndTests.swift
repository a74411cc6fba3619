import Foundation
import HADeployKit
import HomeAssistant
import TestSupport
import Testing
import VirtualDevice

/// The dashboard check against what the real app leaves behind: the twins run the app as it is
/// (its ha-log.txt, its fallback, its crash handler), hadeploy reads the log over house_arrest and
/// compares it with a real Home Assistant 2024.3.3.
@Suite(.serialized)
struct EvidenceEndToEndTests {
    static let arguments = ["--no-build", "--artifacts", "artifacts", "--report", "report"]

    /// A saved dashboard with 2 views and 3 cards, under a name of its own.
    static func makeDashboard(_ ha: HomeAssistantServer) async throws -> String {
        let name = "dashboard-e2e-\(UUID().uuidString.prefix(6).lowercased())"
        let connection = try await ha.connected()
        defer { Task { await connection.close() } }
        _ = try await connection.send(
            RawRequest("lovelace/dashboards/create", ["url_path": .string(name), "title": "E2E"]))
        _ = try await connection.send(
            RawRequest(
                "lovelace/config/save",
                [
                    "url_path": .string(name),
                    "config": [
                        "title": "Hall wall",
                        "views": [
                            [
                                "title": "Hall",
                                "cards": [
                                    ["type": "entities", "entities": ["input_boolean.peer_test"]],
                                    ["type": "markdown", "title": "Welcome"],
                                ],
                            ],
                            [
                                "title": "Night",
                                "cards": [["type": "tile", "entity": "input_boolean.peer_test"]],
                            ],
                        ],
                    ],
                ]))
        return name
    }

    static func deleteDashboard(_ ha: HomeAssistantServer, _ name: String) async throws {
        let connection = try await ha.connected()
        defer { Task { await connection.close() } }
        _ = try await connection.send(
            RawRequest(
                "lovelace/dashboards/delete",
                ["dashboard_id": .string(name.replacingOccurrences(of: "-", with: "_"))]))
    }

    @Test func aUSBTwinIsVerifiedByItsOwnLogAndShowsTheCards() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let dashboard = try await Self.makeDashboard(world.ha)
        let result = try await world.deploy(["mini4", "--dashboard", dashboard] + Self.arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let device = try #require(try world.report().results.first)
        #expect(device.outcome == .succeeded, "\(device.reason ?? "")")
        #expect(device.evidence == [.appLog])
        let verify = try #require(device.steps.first { $0.name == "verify" })
        #expect(verify.detail?.contains("(app log)") == true, "\(verify)")
        // What the app wrote, read from the twin's container: the session hadeploy judged.
        let udid = try #require(world.udids["mini4"])
        let log = try String(
            contentsOf: try await world.usbmuxd.appDataContainer(
                udid: udid, bundleIdentifier: "com.example.hadashboard"
            )
            .appendingPathComponent("Documents/ha-log.txt"), encoding: .utf8)
        #expect(log.contains(" INFO [conn] Lovelace config received: 2 views, 3 cards, strategy=none\n"))
        // The screen (and so the screenshot) shows that dashboard's views and cards.
        let screen = try #require(try await world.usbmuxd.runningApp(udid: udid)).screen
        #expect(screen.lines.first == "Hall wall", "\(screen.lines)")
        #expect(screen.lines.contains("  [Welcome]"))
        #expect(screen.lines.contains("  [Peer test switch: off]"))
        #expect(
            FileManager.default.fileExists(
                atPath: world.root.appendingPathComponent("report/screenshots/mini4.png").path))
    }

    @Test func aDashboardGoneBeforeTheLaunchEndsWithTheAppsFallbackAtOnce() async throws {
        var twins = [DeployWorld.defaultTwins[1], DeployWorld.defaultTwins[2]]
        twins[0].timeouts = "{install: 120, verify: 120}"
        let world = try await DeployWorld(twins: twins)
        defer { Task { await world.shutdown() } }
        let dashboard = try await Self.makeDashboard(world.ha)
        // Slow mini4's link so the dashboard can be deleted after the preflight, before its launch.
        try await world.usbmuxd.inject(.throttle(bytesPerSecond: 4_000), udid: world.udids["mini4"]!)
        async let run = world.deploy(["mini4", "kitchen", "--dashboard", dashboard] + Self.arguments)
        #expect(try await world.uploadStarted("mini4"), "the upload began (the preflight is over)")
        try await Self.deleteDashboard(world.ha, dashboard)
        let result = try await run
        #expect(result.status == 1)
        let byID = Dictionary(uniqueKeysWithValues: try world.report().results.map { ($0.id, $0) })
        let mini4 = try #require(byID["mini4"])
        #expect(mini4.outcome == .failed)
        #expect(mini4.failedStep == "verify")
        let reason = mini4.reason ?? ""
        #expect(reason.contains("the app's log says: Lovelace config fetch failed"), "\(reason)")
        #expect(reason.contains("Unknown config specified: \(dashboard)"), "\(reason)")
        // The app's failure line ends the wait: no waiting out the verification deadline (120 s here,
        // so a loaded machine's slower launch cannot be mistaken for it).
        let verify = try #require(mini4.steps.first { $0.name == "verify" })
        #expect(verify.seconds < 60, "\(verify)")
        // kitchen launched before the deletion or after it: either verified, or failed in the app's words.
        let kitchen = try #require(byID["kitchen"])
        #expect(
            kitchen.outcome == .succeeded || kitchen.reason?.contains("Lovelace config fetch failed") == true)
    }

    @Test func aCrashAtLaunchEndsWithTheCrashAndTheOthersAreUnaffected() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1], DeployWorld.defaultTwins[2]])
        defer { Task { await world.shutdown() } }
        try await world.usbmuxd.inject(.crashOnLaunch, udid: world.udids["kitchen"]!)
        let result = try await world.deploy(["all"] + Self.arguments)
        #expect(result.status == 1)
        let byID = Dictionary(uniqueKeysWithValues: try world.report().results.map { ($0.id, $0) })
        #expect(byID["mini4"]?.outcome == .succeeded)
        #expect(byID["mini4"]?.evidence == [.appLog])
        let kitchen = try #require(byID["kitchen"])
        #expect(kitchen.outcome == .failed)
        #expect(kitchen.reason?.contains("crash") == true, "\(kitchen.reason ?? "")")
        #expect(kitchen.evidence == nil)
    }

    @Test func withItsIntegrationOnATwinIsVerifiedThroughHomeAssistantAlsoWhenNothingChanged() async throws {
        var twin = DeployWorld.defaultTwins[1]
        twin.extra = ["ha_integration: true"]
        twin.deviceName = "Hall iPad \(UUID().uuidString.prefix(4))"
        let world = try await DeployWorld(twins: [twin])
        defer { Task { await world.shutdown() } }
        let dashboard = try await Self.makeDashboard(world.ha)
        // The second deploy changes nothing: same build, same dashboard, same sensor value.
        for round in 1...2 {
            let result = try await world.deploy(["mini4", "--dashboard", dashboard] + Self.arguments)
            #expect(result.status == 0, "round \(round): \(result.stderr)")
            let device = try #require(try world.report().results.first)
            #expect(device.outcome == .succeeded, "round \(round): \(device.reason ?? "")")
            #expect(device.evidence == [.appLog, .homeAssistant], "round \(round)")
            #expect(round == 1 || device.install == .unchanged)
        }
        // One mobile_app device under the device's name, reporting the dashboard.
        let connection = HomeAssistantConnection(
            options: ClientOptions(
                server: try ServerAddress(world.ha.url), token: AccessToken(world.ha.token),
                clock: TestHost.clock))
        try await connection.connect()
        defer { Task { await connection.close() } }
        let sensor = try #require(
            try await connection.mobileAppSensor(deviceName: twin.deviceName!, key: "active_dashboard"))
        let state = try await connection.states().first { $0.entityID == sensor.entityID }
        #expect(state?.state == dashboard)
    }

    @Test func aTokenRevokedBeforeTheLaunchEndsWithTheAppsAuthFailedWellBeforeTheDeadline() async throws {
        var twin = DeployWorld.defaultTwins[1]
        twin.timeouts = "{install: 120, verify: 120}"
        twin.loadedEvent = false
        let world = try await DeployWorld(twins: [twin])
        defer { Task { await world.shutdown() } }
        // A token of its own, so revoking it leaves the shared server's token alone.
        let admin = HomeAssistantConnection(
            options: ClientOptions(
                server: try ServerAddress(world.ha.url), token: AccessToken(world.ha.token),
                clock: TestHost.clock))
        try await admin.connect()
        defer { Task { await admin.close() } }
        let client = "hadeploy-e2e-\(UUID().uuidString.prefix(8))"
        let token = try #require(
            try await admin.send(
                RawRequest("auth/long_lived_access_token", ["client_name": .string(client), "lifespan": 1])
            )
            .stringValue)
        try await world.usbmuxd.inject(.throttle(bytesPerSecond: 4_000), udid: world.udids["mini4"]!)
        async let run = world.deploy(["mini4"] + Self.arguments, environment: ["HA_TOKEN": token])
        #expect(try await world.uploadStarted("mini4"), "the upload began (the preflight is over)")
        let tokens = try await admin.send(RawRequest("auth/refresh_tokens")).arrayValue ?? []
        let id = try #require(tokens.first { $0["client_name"]?.stringValue == client }?["id"]?.stringValue)
        _ = try await admin.send(RawRequest("auth/delete_refresh_token", ["refresh_token_id": .string(id)]))
        let result = try await run
        #expect(result.status == 1)
        #expect(!result.stdout.contains(token) && !result.stderr.contains(token))
        let device = try #require(try world.report().results.first)
        #expect(device.outcome == .failed)
        #expect(device.failedStep == "verify")
        #expect(
            device.reason?.contains("the app's log says: Auth failed: Authentication failed") == true,
            "\(device.reason ?? "")")
        let verify = try #require(device.steps.first { $0.name == "verify" })
        #expect(verify.seconds < 60, "ended by the app's words, not the 120 s deadline: \(verify)")
    }
}
