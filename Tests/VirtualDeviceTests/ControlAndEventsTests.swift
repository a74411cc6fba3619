import Foundation
import TestSupport
import Testing
import VirtualDevice

#if canImport(Glibc)
    import Glibc
#endif

extension VirtualDeviceSuite {
    @Suite("control socket, usbmuxd events")
    struct ControlAndEventsTests {
        /// Sends JSON lines to `<state>/control.sock` and returns the reply lines.
        static func control(_ directory: URL, _ lines: [String]) throws -> [String] {
            try TwinControl.request(directory, lines)
        }

        @Test("faults and reboots through the JSON-lines control socket")
        func controlSocket() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let replies = try Self.control(
                emulator.directory,
                [
                    #"{"command":"inject","udid":"mini4","fault":{"passcodeLocked":{}}}"#,
                    #"{"command":"devices"}"#,
                    #"{"command":"nonsense"}"#,
                    #"{"command":"clearFaults","udid":"\#(udid)"}"#,
                ])
            #expect(replies[0] == #"{"ok":true}"#)
            #expect(replies[1].contains(#""passcodeLocked""#) && replies[1].contains(udid), "\(replies[1])")
            #expect(replies[2].contains(#""ok":false"#))
            #expect(replies[3] == #"{"ok":true}"#)
            #expect(await emulator.daemon.devices().first?.activeFaults == [])

            _ = try Self.control(
                emulator.directory, [#"{"command":"inject","udid":"mini4","fault":{"passcodeLocked":{}}}"#])
            let info = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "PasswordProtected"])
            #expect(info.stdout == "true\n", "\(info)")
        }

        @Test(
            "battery and storage set through the control socket are what ideviceinfo reads; a reboot is remembered"
        )
        func healthThroughTheControlSocket() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let before = try await emulator.run(
                "ideviceinfo", ["-u", udid, "-q", "com.apple.mobile.battery"])
            #expect(before.stdout.contains("BatteryCurrentCapacity: 100"), "\(before)")
            let replies = try Self.control(
                emulator.directory,
                [
                    #"{"command":"setHealth","udid":"mini4","health":{"batteryLevel":12,"externalConnected":false,"dataAvailable":400000000}}"#,
                    #"{"command":"setHealth","udid":"mini4","health":{"batteryLevel":140}}"#,
                    #"{"command":"health","udid":"\#(udid)"}"#,
                ])
            #expect(replies[0] == #"{"ok":true}"#)
            #expect(replies[1].contains(#""ok":false"#) && replies[1].contains("0...100"), "\(replies[1])")
            #expect(replies[2].contains(#""batteryLevel":12"#), "\(replies[2])")
            // The Debian client, as against a real device: the keys and values it prints.
            let battery = try await emulator.run(
                "ideviceinfo", ["-u", udid, "-q", "com.apple.mobile.battery"])
            #expect(battery.status == 0, "\(battery)")
            let lines = Set(battery.stdout.split(separator: "\n").map(String.init))
            #expect(
                lines.isSuperset(of: [
                    "BatteryCurrentCapacity: 12", "BatteryIsCharging: false", "ExternalConnected: false",
                    "FullyCharged: false",
                ]), "\(battery)")
            let disk = try await emulator.run("ideviceinfo", ["-u", udid, "-q", "com.apple.disk_usage"])
            #expect(disk.stdout.contains("AmountDataAvailable: 400000000"), "\(disk)")
            // A reboot is a new boot, remembered by the device's state like a real one's uptime.
            let booted = try await emulator.daemon.bootedAt(udid: udid)
            try await emulator.daemon.reboot(udid: udid)
            #expect(try await emulator.daemon.bootedAt(udid: udid) > booted)
            #expect(try await emulator.daemon.health(udid: udid).batteryLevel == 12)
        }

        @Test("an install stalled on the device ends with 'Device removed' when the device reboots")
        func detachedDuringStalledInstall() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let app = try TestBundles.makeApp(
                in: emulator.directory.appendingPathComponent("build"), bundleID: "io.hadeploy.stuck")
            try await emulator.daemon.inject(.stall(at: .install), udid: udid)
            let daemon = emulator.daemon
            let rebooter = Task {
                try await Task.sleep(for: .seconds(3))
                try await daemon.reboot(udid: udid)
            }
            let install = try await emulator.run(
                "ideviceinstaller", ["-u", udid, "-i", app.path], timeout: 30)
            _ = try await rebooter.value
            #expect(!install.timedOut, "\(install)")
            #expect(install.output.contains("Device removed"), "\(install)")
            #expect(try await emulator.daemon.installedApps(udid: udid).isEmpty)
        }
    }
}
