import Foundation
import HADeployKit
import TestSupport
import Testing
import VirtualDevice

/// Wall iPads on Wi-Fi reached from Linux with hadeploy alone: no usbmuxd lists them (Linux's lists USB
/// devices only), each announces itself over multicast DNS (`_apple-mobdev2._tcp`) as an iOS device
/// does, and hadeploy's own usbmuxd finds, lists and connects them — for libimobiledevice, for
/// pymobiledevice3's lockdown tunnel, and for other tools through `hadeploy muxer`. The announcement
/// is checked with a real mDNS client (pymobiledevice3's `bonjour mobdev2`), the muxer's socket with
/// pymobiledevice3 and the Debian tools. Serialized: every twin here answers the same multicast group.
@Suite(.serialized)
struct WiFiOnlyEndToEndTests {
    static let twins = [
        DeployWorld.Twin(
            id: "mini4", productType: "iPad5,1", ios: "15.8", arch: "arm64", flavour: "modern", network: true),
        DeployWorld.Twin(
            id: "iphone", productType: "iPhone17,2", ios: "18.6", arch: "arm64", flavour: "modern",
            network: true, transport: "devicectl"),
        DeployWorld.Twin(
            id: "mini5", productType: "iPad11,1", ios: "26.0", arch: "arm64", flavour: "modern",
            network: true, transport: "devicectl"),
    ]

    /// A project with the three devices in its devices.yaml, whose own twins stay USB-only and silent:
    /// the test's hadeploy processes start the Wi-Fi twins (`--virtual`, `hadeploy virtual`).
    static func projectOnly() async throws -> DeployWorld {
        try await DeployWorld(
            twins: twins.map {
                var twin = $0
                twin.network = false
                return twin
            })
    }

    /// The issue's "done when": `hadeploy mini4 iphone mini5 --virtual --wifi-only --kiosk` with a real
    /// Home Assistant ends with all three verified, and `devices` lists them as Wi-Fi devices with
    /// their addresses and how they were found.
    @Test func threeWiFiOnlyTwinsAreFoundOverMDNSDeployedAndVerified() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await Self.projectOnly()
        defer { Task { await world.shutdown() } }
        // No usbmuxd of this machine is asked: the run's twins are listed by none.
        let environment = ["USBMUXD_SOCKET_ADDRESS": "", "PYMOBILEDEVICE3": pymobiledevice3]
        let arguments = [
            "mini4", "iphone", "mini5", "--kiosk", "--virtual", "--wifi-only", "--no-build", "--report",
            "report-wifi",
        ]
        let plan = try await world.deploy(["plan"] + arguments + ["--json"], environment: environment)
        #expect(plan.status == 0, "\(plan.stderr)")
        for id in ["mini4", "iphone", "mini5"] {
            #expect(
                try WiFiDeployEndToEndTests.backend(plan.stdout, id)["lookup"] as? String == "network",
                "\(id)")
        }

        let run = try await world.deploy(arguments, environment: environment, timeout: .seconds(420))
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let report = try world.report("report-wifi")
        #expect(Set(report.results.map(\.id)) == ["mini4", "iphone", "mini5"])
        for device in report.results {
            #expect(device.outcome == .succeeded, "\(device.id): \(device.reason ?? "")")
            #expect(device.transport.hasSuffix("(Wi-Fi)"), "\(device.id): \(device.transport)")
            guard case .loaded = device.verification else {
                Issue.record("\(device.id) not loaded: \(device.verification) (\(device.reason ?? ""))")
                continue
            }
        }

        let listed = try await world.deploy(
            ["devices", "--virtual", "--wifi-only", "--state", ".hadeploy/devices"], environment: environment)
        #expect(listed.status == 0, "\(listed.stderr)")
        for id in ["mini4", "iphone", "mini5"] {
            let line = try #require(
                listed.stdout.split(separator: "\n").first { $0.hasPrefix(id + " ") }, "\(id)")
            #expect(line.contains("Wi-Fi 127.77."), "\(line)")
            #expect(line.contains("mDNS as a4:c3:61:"), "\(line)")
        }

        let status = try await world.deploy(
            ["status", "mini4", "iphone", "mini5", "--virtual", "--wifi-only", "--json"],
            environment: environment)
        let devices = try #require(
            (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["devices"]
                as? [[String: Any]], "\(status.stdout)\n\(status.stderr)")
        #expect(devices.count == 3)
        for device in devices {
            #expect((device["address"] as? String)?.hasPrefix("127.77.") == true, "\(device)")
            #expect((device["foundBy"] as? String)?.hasPrefix("mDNS as ") == true, "\(device)")
        }
    }

    /// Without `--virtual`: devices.yaml's `network: true` devices, this machine's usbmuxd listing
    /// none of them. A device that leaves the network (asleep, Wi-Fi off: its goodbye goes out over
    /// mDNS) ends its connect step within the deadline with what to do; back on the network, the next
    /// run finds it again.
    @Test func aWiFiDeviceAsleepFailsWithWhatToDoAndIsFoundAgainWhenItWakes() async throws {
        var twin = Self.twins[0]
        twin.timeouts = "{connect: 4}"
        let world = try await DeployWorld(twins: [twin], wifiOnly: true)
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        // Linux's usbmuxd as the world has it: no entry for the Wi-Fi device.
        #expect(await world.usbmuxd.devices().allSatisfy { $0.deviceID == nil })
        let listed = try await ToolRun.run(
            "idevice_id", ["-l", "-n"], environment: ["USBMUXD_SOCKET_ADDRESS": world.socket])
        #expect(listed.stdout.isEmpty, "\(listed.stdout)")

        try await world.usbmuxd.setOnNetwork(false, udid: udid)
        let started = ContinuousClock.now
        let asleep = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(asleep.status != 0)
        let failed = try #require(try world.report().results.first)
        #expect(failed.outcome == .failed)
        #expect(failed.failedStep == "connect")
        #expect(failed.reason?.contains("not found on the network") == true, "\(failed.reason ?? "")")
        #expect(
            failed.reason?.contains("asleep or off the network: wake it") == true, "\(failed.reason ?? "")")
        #expect(ContinuousClock.now - started < .seconds(60), "three connect attempts of 4 s, not a hang")

        try await world.usbmuxd.setOnNetwork(true, udid: udid)
        let awake = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(awake.status == 0, "\(awake.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.outcome == .succeeded, "\(mini4.reason ?? "")")
        #expect(mini4.transport == "usb (Wi-Fi)")
        #expect(try await world.usbmuxd.runningApp(udid: udid) != nil)
    }

    /// `hadeploy virtual --wifi-only` announces its twins over mDNS (pymobiledevice3's own browser
    /// finds them and pairs over TCP with the records), lists them in no usbmuxd, and `hadeploy muxer`
    /// serves a usbmuxd socket through which pymobiledevice3 and the Debian tools list and reach them.
    @Test func theMuxerSocketListsWiFiOnlyTwinsForPymobiledevice3AndTheDebianTools() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await Self.projectOnly()
        defer { Task { await world.shutdown() } }
        let binary = try await HADeployBinary.path
        let state = world.root.appendingPathComponent("wifi-twins")
        let twins = try BackgroundCommand(
            binary, ["virtual", "--wifi-only", "--only", "mini4", "iphone", "--state", state.path],
            in: world.root,
            environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        defer { twins.stop() }
        let upstream = try #require(try await twins.line(startingWith: "USBMUXD_SOCKET_ADDRESS="))
            .replacingOccurrences(of: "USBMUXD_SOCKET_ADDRESS=", with: "")
        let udids = twins.output.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "udid ") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "," })
        }
        #expect(udids.count == 2, "\(twins.output)")

        // A real mDNS client: pymobiledevice3 browses _apple-mobdev2._tcp, matches each announcement
        // to a pair record by its Wi-Fi MAC address and opens lockdown over TCP at the address found.
        let bonjour = try await ToolRun.run(
            pymobiledevice3,
            [
                "bonjour", "mobdev2", "--timeout", "3", "--pair-records",
                state.appendingPathComponent("usbmuxd").path,
            ])
        #expect(bonjour.status == 0, "\(bonjour.stderr)")
        let browsed = try #require(
            try JSONSerialization.jsonObject(with: Data(bonjour.stdout.utf8)) as? [[String: Any]])
        for udid in udids {
            let found = browsed.first { $0["UniqueDeviceID"] as? String == udid }
            #expect((found?["ip"] as? String)?.hasPrefix("127.77.") == true, "\(udid): \(browsed)")
        }
        // The twins' usbmuxd (Linux's, as it were) lists none of them, on USB or Wi-Fi.
        let direct = try await ToolRun.run(
            "idevice_id", ["-l", "-n"], environment: ["USBMUXD_SOCKET_ADDRESS": upstream])
        #expect(direct.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(direct.stdout)")

        let socket = world.root.appendingPathComponent("m.sock").path
        let muxer = try BackgroundCommand(
            binary, ["muxer", "--socket", socket, "--usbmuxd", upstream, "--pair-records", "records"],
            in: world.root,
            environment: [:])
        defer { muxer.stop() }
        #expect(
            try await muxer.line(startingWith: "USBMUXD_SOCKET_ADDRESS=UNIX:\(socket)") != nil,
            "\(muxer.output)")
        for udid in udids {
            #expect(try await muxer.line(containing: "Wi-Fi: \(udid) at 127.77.") != nil, "\(muxer.output)")
        }
        let mode = try FileManager.default.attributesOfItem(atPath: socket)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the socket is its owner's alone")

        let listed = try await ToolRun.run(
            pymobiledevice3, ["usbmux", "list"], environment: ["USBMUXD_SOCKET_ADDRESS": socket])
        #expect(listed.status == 0, "\(listed.stderr)")
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        for udid in udids {
            let entry = entries.first { $0["UniqueDeviceID"] as? String == udid }
            #expect(entry?["ConnectionType"] as? String == "Network", "\(udid): \(entries)")
        }
        let ids = try await ToolRun.run(
            "idevice_id", ["-n"], environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + socket])
        #expect(
            Set(ids.stdout.split(separator: "\n").map(String.init)) == Set(udids),
            "\(ids.stdout)\(ids.stderr)")
        // Paired over TCP with the record the twins' usbmuxd keeps (read through the muxer).
        let name = try await ToolRun.run(
            "ideviceinfo", ["-n", "-u", udids[0], "-k", "DeviceName"],
            environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + socket])
        #expect(name.status == 0, "\(name.stdout)\(name.stderr)")
        #expect(name.stdout.hasPrefix("mini4"), "\(udids): \(name.stdout)\(name.stderr)\n\(twins.output)")
    }

    /// `hadeploy pair`: over USB, says what to do while the device asks "Trust This Computer?", pairs
    /// when the user taps Trust, turns on Wi-Fi connections, and keeps the record owner-only where the
    /// next run and pymobiledevice3 find it. The device then deploys over Wi-Fi with that record alone.
    @Test func pairOverUSBOnceThenDeployOverWiFiWithTheRecordItKept() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        var twin = Self.twins[0]
        twin.usbToo = true
        let world = try await DeployWorld(twins: [twin], wifiOnly: true)
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.inject(.pairingDialogPending, udid: udid)

        let binary = try await HADeployBinary.path
        let records = world.root.appendingPathComponent("pair-records")
        let pair = try BackgroundCommand(
            binary, ["pair", "mini4", "--timeout", "60"], in: world.root,
            environment: ["USBMUXD_SOCKET_ADDRESS": world.socket, "HADEPLOY_PAIR_RECORDS": records.path])
        defer { pair.stop() }
        #expect(try await pair.line(containing: "waiting: tap Trust on") != nil, "\(pair.output)")
        try await world.usbmuxd.clearFaults(udid: udid, kind: "pairingDialogPending")
        try await world.usbmuxd.acceptNextPairing(udid: udid)
        let done = try await pair.line(containing: "paired with")
        #expect(done?.contains("Wi-Fi connections on") == true, "\(pair.output)")

        let kept = records.appendingPathComponent(udid + ".plist")
        let copy = world.root.appendingPathComponent(".pymobiledevice3/\(udid).plist")
        for file in [kept, copy] {
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file.path): the host's private key is its owner's alone")
        }
        // The Debian tools read the setting back from the device itself.
        let setting = try await ToolRun.run(
            "ideviceinfo",
            ["-u", udid, "-q", "com.apple.mobile.wireless_lockdown", "-k", "EnableWifiConnections"],
            environment: ["USBMUXD_SOCKET_ADDRESS": world.socket])
        #expect(setting.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "true", "\(setting.stderr)")

        // pymobiledevice3 finds it over mDNS with the record in ~/.pymobiledevice3 alone.
        let bonjour = try await ToolRun.run(
            pymobiledevice3, ["bonjour", "mobdev2", "--timeout", "3"], environment: ["HOME": world.root.path])
        #expect(bonjour.stdout.contains(udid), "\(bonjour.stdout)\(bonjour.stderr.suffix(3000))")

        // Unplugged, and the USB host's usbmuxd forgets it: only hadeploy's record is left.
        try FileManager.default.removeItem(
            at: world.root.appendingPathComponent("virtual/usbmuxd/\(udid).plist"))
        let run = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.outcome == .succeeded, "\(mini4.reason ?? "")")
        #expect(mini4.transport == "usb (Wi-Fi)")
    }

    /// `address:` in devices.yaml (from `.env`), on a network that passes no multicast DNS: the device
    /// is reached at its address; at a wrong one, its step says what answers there.
    @Test func aWiFiDeviceIsReachedAtItsAddressWhereNoMDNSPasses() async throws {
        var twin = Self.twins[0]
        twin.timeouts = "{connect: 3}"
        twin.extra = ["address: ${MINI4_ADDRESS}"]
        let world = try await DeployWorld(twins: [twin], wifiOnly: true, announces: false)
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        let address = try #require(try await world.usbmuxd.networkAddress(udid: udid))
        let env = world.root.appendingPathComponent(".env")
        let base = try String(contentsOf: env, encoding: .utf8)

        try (base + "MINI4_ADDRESS=127.0.0.1\n").write(to: env, atomically: true, encoding: .utf8)
        let wrong = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(wrong.status != 0)
        let failed = try #require(try world.report().results.first)
        #expect(failed.failedStep == "connect")
        #expect(
            failed.reason?.contains("nothing answers at its address 127.0.0.1") == true,
            "\(failed.reason ?? "")")

        try (base + "MINI4_ADDRESS=\(address)\n").write(to: env, atomically: true, encoding: .utf8)
        let run = try await world.deploy(DeployEndToEndTests.arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.outcome == .succeeded, "\(mini4.reason ?? "")")
        #expect(mini4.transport == "usb (Wi-Fi)")
        let status = try await world.deploy(["status", "mini4", "--json"])
        #expect(
            status.stdout.contains("\"foundBy\" : \"its address \(address) in devices.yaml\""),
            "\(status.stdout)")
    }
}
