import Foundation
import HADeployKit
import TestSupport
import Testing
import VirtualDevice

/// The iPad mini 4 as the old script deployed it (`ideviceinstaller -n`): a Wi-Fi-synced device
/// reached through usbmuxd's network lookup, deployed by the hadeploy binary and verified through a
/// real Home Assistant.
@Suite(.serialized)
struct WiFiDeployEndToEndTests {
    static var wifiMini4: DeployWorld.Twin {
        var twin = DeployWorld.defaultTwins[1]
        twin.network = true
        return twin
    }

    static func backend(_ planJSON: String, _ id: String) throws -> [String: Any] {
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(planJSON.utf8)) as? [String: Any])
        let devices = try #require(plan["devices"] as? [[String: Any]])
        let device = try #require(devices.first { $0["id"] as? String == id })
        return try #require(device["backend"] as? [String: Any])
    }

    @Test func aWiFiDeviceIsPlannedOnTheNetworkLookupDeployedDirectlyAndVerified() async throws {
        let world = try await DeployWorld(twins: [Self.wifiMini4, DeployWorld.defaultTwins[0]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])

        let planArguments = ["plan", "all", "--kiosk", "--no-build", "--report", "report"]
        let plan = try await world.deploy(planArguments + ["--json"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(try Self.backend(plan.stdout, "mini4")["lookup"] as? String == "network")
        #expect(try Self.backend(plan.stdout, "ipad2")["lookup"] as? String == "usb")
        let text = try await world.deploy(planArguments)
        #expect(text.stdout.contains("Wi-Fi via usbmuxd at"), "\(text.stdout)")
        #expect(text.stdout.contains("upgrade in place"), "\(text.stdout)")

        let before = try await world.usbmuxd.networkConnections(udid: udid)
        let result = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try world.report()
        for device in report.results {
            #expect(device.outcome == .succeeded, "\(device.id): \(device.reason ?? "")")
            guard case .loaded = device.verification else {
                Issue.record("\(device.id) not loaded: \(device.verification)")
                continue
            }
        }
        #expect(report.results.first { $0.id == "mini4" }?.transport == "usb (Wi-Fi)")
        #expect(report.results.first { $0.id == "ipad2" }?.transport == "usb")
        // lockdownd and every service were reached at the twin's own address, as over Wi-Fi.
        #expect(try await world.usbmuxd.networkConnections(udid: udid) > before + 4)
        #expect(try await world.usbmuxd.runningApp(udid: udid) != nil)

        // A redeploy of a new build upgrades in place: what the app keeps in its container stays.
        let app = try #require(try await world.usbmuxd.installedApps(udid: udid).first)
        let container = try await world.usbmuxd.appDataContainer(
            udid: udid, bundleIdentifier: app.bundleIdentifier)
        let kept = container.appendingPathComponent("Documents/kept-by-upgrade.txt")
        try Data("mine".utf8).write(to: kept)
        let again = try await world.deploy(DeployEndToEndTests.arguments + ["--force"])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(FileManager.default.fileExists(atPath: kept.path), "the upgrade kept the data container")
    }

    /// `--virtual` (what `make demo` runs): hadeploy starts the matrix's twins itself, and the
    /// `network: true` device's twin is a network twin, verified over Wi-Fi.
    @Test func theVirtualMatrixGivesTheWiFiDeviceANetworkTwin() async throws {
        let world = try await DeployWorld(twins: [Self.wifiMini4])
        defer { Task { await world.shutdown() } }
        let arguments = ["all", "--kiosk", "--virtual", "--no-build", "--report", "report-virtual"]
        let plan = try await world.deploy(
            ["plan"] + arguments + ["--json"], environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        #expect(plan.status == 0, "\(plan.stderr)")
        let backend = try Self.backend(plan.stdout, "mini4")
        #expect(backend["lookup"] as? String == "network")
        #expect((backend["usbmuxd"] as? String)?.hasPrefix("virtual:") == true)

        let run = try await world.deploy(arguments, environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        #expect(run.status == 0, "\(run.stderr)")
        let mini4 = try #require(try world.report("report-virtual").results.first)
        #expect(mini4.outcome == .succeeded, "\(mini4.reason ?? "")")
        guard case .loaded = mini4.verification else {
            Issue.record("mini4 not loaded: \(mini4.verification)")
            return
        }
    }

    @Test func aWiFiDeviceThatLeavesTheNetworkFailsWithTheNextStep() async throws {
        var twin = Self.wifiMini4
        twin.timeouts = "{connect: 3}"
        let world = try await DeployWorld(twins: [twin])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.setOnNetwork(false, udid: udid)
        let started = ContinuousClock.now
        let result = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(result.status != 0)
        let report = try world.report()
        let mini4 = try #require(report.results.first)
        #expect(mini4.outcome == .failed)
        #expect(mini4.failedStep == "connect")
        #expect(mini4.reason?.contains("not found on the network") == true, "\(mini4.reason ?? "")")
        #expect(mini4.reason?.contains("asleep or off the network") == true, "\(mini4.reason ?? "")")
        // Three connect attempts of 3 s, not a hang.
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}
