import Foundation
import HADeployBuild
import HADeployCore
import TestSupport
import Testing
import VirtualDevice

/// `hadeploy status` against twins with the real binary: what a wall of iPads looks like between
/// deploys, and the exit code that says whether anything needs attention.
@Suite(.serialized)
struct StatusEndToEndTests {
    /// `status … --json`, decoded.
    static func devices(_ stdout: String) throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
        let devices = try #require(object?["devices"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: devices.map { ($0["id"] as? String ?? "?", $0) })
    }

    static func value(_ fact: Any?) -> Any? { (fact as? [String: Any])?["value"] }

    @Test func lowBatteryARebootAnOlderBuildAndAnUnreachableDeviceAreEachNamed() async throws {
        let world = try await DeployWorld()
        defer { Task { await world.shutdown() } }
        let deploy = try await world.deploy(["all", "--no-build", "--artifacts", "artifacts"])
        #expect(deploy.status == 0, "\(deploy.stderr)")

        let fresh = try await world.deploy(["status", "all", "--artifacts", "artifacts"])
        #expect(fresh.status == 0, "\(fresh.stdout)\n\(fresh.stderr)")
        #expect(fresh.stdout.contains("nothing needs attention"), "\(fresh.stdout)")

        // The kitchen iPad gets an older build; the mini4 runs down its battery off the charger; the
        // iPad 2 restarts (which unmounts the Developer Disk Image the deploy mounted).
        let older = try DemoAppBuilder().build(
            flavour: DeployWorld.modernFlavour, marketingVersion: "1.1.0", buildNumber: 1,
            into: world.root.appendingPathComponent("older"), devices: Array(world.udids.values),
            now: Date(), in: TestHost.fileSystem)
        let downgrade = try await world.deploy([
            "kitchen", "--no-build", "--artifact", older.path, "--no-verify",
        ])
        #expect(downgrade.status == 0, "\(downgrade.stderr)")
        try await world.usbmuxd.setHealth(
            VirtualDeviceHealth(batteryLevel: 12, charging: false, externalConnected: false),
            udid: try #require(world.udids["mini4"]))
        try await world.usbmuxd.reboot(udid: try #require(world.udids["ipad2"]))
        #expect(try await world.attached("ipad2"), "the iPad 2 came back after its reboot")
        // A device whose UDID no usbmuxd lists: named with the reason, the others still answer.
        try world.addDevice(
            id: "hallway",
            lines: [
                "product_type: iPad5,1", "ios: \"15.8\"", "arch: arm64", "flavour: modern",
                "transport: usb", "udid: 00008020-00000000DEADBEEF",
            ])

        let started = ContinuousClock.now
        let status = try await world.deploy(
            [
                "status", "all", "--artifacts", "artifacts", "--timeout", "20", "--json", "--report",
                "status-report",
            ])
        // Bounded by the per-device deadline (an unreachable device waits it out), not a hang.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(status.status == 3, "a device did not answer: \(status.stdout)\n\(status.stderr)")
        let devices = try Self.devices(status.stdout)
        #expect(devices.keys.sorted() == ["hallway", "ipad2", "kitchen", "mini4"])

        let mini4 = try #require(devices["mini4"])
        let battery = try #require(Self.value(mini4["battery"]) as? [String: Any])
        #expect(battery["level"] as? Int == 12 && battery["charging"] as? Bool == false)
        #expect(
            (mini4["attention"] as? [String])?.contains { $0.hasPrefix("battery low: 12 %") } == true,
            "\(mini4)")
        #expect(mini4["build"] as? String == "up to date")
        #expect(Self.value(mini4["running"]) as? Bool == true)
        #expect((Self.value(mini4["dashboard"]) as? [String: Any])?["loaded"] as? Bool == true, "\(mini4)")
        #expect(Self.value(mini4["ios"]) as? String == "15.8")
        #expect(
            ((Self.value(mini4["storage"]) as? [String: Any])?["availableBytes"] as? Int ?? 0) > 1_000_000_000
        )
        #expect(mini4["lastVerifiedAt"] is String)

        let ipad2 = try #require(devices["ipad2"])
        #expect(Self.value(ipad2["rebootedSinceDeploy"]) as? Bool == true, "\(ipad2)")
        #expect((ipad2["attention"] as? [String])?.contains("restarted since the last deploy") == true)

        let kitchen = try #require(devices["kitchen"])
        #expect(kitchen["build"] as? String == "outdated", "\(kitchen)")
        let installed = try #require(Self.value(kitchen["installed"]) as? [String: Any])
        #expect(
            installed["marketingVersion"] as? String == "1.1.0" && installed["buildNumber"] as? String == "1")
        #expect(
            (kitchen["attention"] as? [String])?.contains { $0.hasPrefix("outdated: 1.1.0 (1) installed") }
                == true)

        let hallway = try #require(devices["hallway"])
        #expect(hallway["reachable"] as? Bool == false)
        let reason = try #require(hallway["unreachable"] as? String)
        // What usbmuxd lists, and the next step, not a bare timeout.
        #expect(reason.contains("lists") && reason.contains("idevice_id -l"), "\(reason)")

        // The contact sheet and its JSON.
        let sheet = try String(
            contentsOf: world.root.appendingPathComponent("status-report/index.html"), encoding: .utf8)
        #expect(sheet.contains("data-device=\"kitchen\"") && sheet.contains("battery low: 12 %"))
        #expect(
            FileManager.default.fileExists(
                atPath: world.root.appendingPathComponent("status-report/status.json").path))

        // The table without the unreachable device: attention, not "not reached".
        let table = try await world.deploy([
            "status", "ipad2", "mini4", "kitchen", "--artifacts", "artifacts",
        ])
        #expect(table.status == 1, "\(table.stdout)\n\(table.stderr)")
        #expect(table.stdout.contains("mini4: battery low: 12 %, not on a charger"), "\(table.stdout)")
        #expect(table.stdout.contains("kitchen: outdated: 1.1.0 (1) installed"), "\(table.stdout)")
        #expect(table.stdout.contains("ipad2: restarted since the last deploy"), "\(table.stdout)")
        #expect(!table.stdout.contains(world.ha.token) && !table.stderr.contains(world.ha.token))
    }

    @Test func withItsIntegrationOnTheDashboardHomeAssistantLastHeardIsShown() async throws {
        var twin = DeployWorld.defaultTwins[1]
        twin.extra = ["ha_integration: true"]
        twin.deviceName = "Status iPad \(UUID().uuidString.prefix(4))"
        let world = try await DeployWorld(twins: [twin, DeployWorld.defaultTwins[2]])
        defer { Task { await world.shutdown() } }
        let dashboard = try await EvidenceEndToEndTests.makeDashboard(world.ha)
        let deploy = try await world.deploy([
            "mini4", "kitchen", "--dashboard", dashboard, "--no-build", "--artifacts", "artifacts",
        ])
        #expect(deploy.status == 0, "\(deploy.stderr)")

        let status = try await world.deploy([
            "status", "mini4", "kitchen", "--artifacts", "artifacts", "--json",
        ])
        let devices = try Self.devices(status.stdout)
        let mini4 = try #require(devices["mini4"], "\(status.stdout)\n\(status.stderr)")
        // What the app reported to Home Assistant as active_dashboard, read from Home Assistant.
        #expect(Self.value(mini4["homeAssistantDashboard"]) as? String == dashboard, "\(mini4)")
        // The kitchen iPad's integration is off: Home Assistant is not asked about it.
        let kitchen = try #require(devices["kitchen"])
        #expect(kitchen["homeAssistantDashboard"] == nil, "\(kitchen)")

        let table = try await world.deploy(["status", "mini4", "kitchen", "--artifacts", "artifacts"])
        #expect(table.stdout.contains("HA DASHBOARD"), "\(table.stdout)")
        #expect(
            table.stdout.split(separator: "\n").contains { $0.hasPrefix("mini4") && $0.contains(dashboard) },
            "\(table.stdout)")
        #expect(!table.stdout.contains(world.ha.token) && !table.stderr.contains(world.ha.token))
    }

    @Test func theVirtualTwinsAreEachListedWithTheirFacts() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[0], DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let environment = ["USBMUXD_SOCKET_ADDRESS": ""]
        let deploy = try await world.deploy(["all", "--virtual", "--no-build"], environment: environment)
        #expect(deploy.status == 0, "\(deploy.stderr)")
        let status = try await world.deploy(
            ["status", "all", "--virtual", "--json"], environment: environment)
        let devices = try Self.devices(status.stdout)
        #expect(devices.keys.sorted() == ["ipad2", "mini4"], "\(status.stdout)\n\(status.stderr)")
        for (id, device) in devices {
            #expect(device["reachable"] as? Bool == true, "\(id): \(device)")
            #expect(device["build"] as? String == "up to date", "\(id): \(device)")
            #expect((Self.value(device["battery"]) as? [String: Any])?["level"] as? Int == 100, "\(id)")
            #expect(Self.value(device["storage"]) != nil, "\(id)")
            #expect(Self.value(device["rebootedSinceDeploy"]) as? Bool == false, "\(id): \(device)")
            #expect(device["lastDeployedAt"] is String, "\(id)")
            // The twins started for this run: the app the deploy launched is not running in them.
            #expect(Self.value(device["running"]) as? Bool == false, "\(id): \(device)")
            #expect(
                (Self.value(device["dashboard"]) as? [String: Any])?["summary"] is String, "\(id): \(device)")
        }
        #expect(status.status == 1, "the apps are not running: \(status.stdout)")
    }

    /// A connection that breaks once (a device re-enumerating on USB, a Wi-Fi hiccup) is tried again
    /// a moment later: the device is read, not reported unreachable.
    @Test func aConnectionThatBreaksOnceIsTriedAgainAndTheDeviceIsRead() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.inject(.dropNextLockdownConnection, udid: udid)
        let status = try await world.deploy(["status", "mini4", "--artifacts", "artifacts", "--json"])
        let mini4 = try #require(
            try Self.devices(status.stdout)["mini4"], "\(status.stdout)\n\(status.stderr)")
        #expect(mini4["reachable"] as? Bool == true, "\(mini4)")
        #expect((Self.value(mini4["battery"]) as? [String: Any])?["level"] as? Int == 100, "\(mini4)")
        // The twin did drop that connection.
        #expect(!(try await world.usbmuxd.faults(udid: udid)).contains(.dropNextLockdownConnection))
    }
}
