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
        let connection = HomeAssistantConnection(
            options: ClientOptions(server: try ServerAddress(ha.url), token: AccessToken(ha.token)))
        try await connection.connect()
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
        let connection = HomeAssistantConnection(
            options: ClientOptions(server: try ServerAddress(ha.url), token: AccessToken(ha.token)))
        try await connection.connect()
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
        twins[0].timeouts = "{install: 120}"
        let world = try await DeployWorld(twins: twins)
        defer { Task { await world.shutdown() } }
        let dashboard = try await Self.makeDashboard(world.ha)
        // Slow mini4's link so the dashboard can be deleted after the preflight, before its launch.
        try await world.usbmuxd.inject(.throttle(bytesPerSecond: 4_000), udid: world.udids["mini4"]!)
        async let run = world.deploy(["mini4", "kitchen", "--dashboard", dashboard] + Self.arguments)
        try await Task.sleep(for: .seconds(3))
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
        // The app's failure line ends the wait: no waiting out the 20 s verification timeout.
        let verify = try #require(mini4.steps.first { $0.name == "verify" })
        #expect(verify.seconds < 10, "\(verify)")
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
}
