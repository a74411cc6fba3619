import Foundation
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    /// The old script's iPad mini 4 path: `ideviceinstaller -n -u UDID upgrade app.ipa` against a
    /// Wi-Fi-synced device, with the Debian tools as the clients.
    @Suite("network (Wi-Fi-synced) twins against the Debian tools")
    struct NetworkTwinTests {
        static var networkMini4: VirtualDeviceProfile {
            var profile = Profiles.ipadMini4
            profile.connection = .network
            return profile
        }

        @Test("a network twin is listed as Network, reached only with -n, and connected to directly")
        func listedAndReached() async throws {
            let emulator = try await EmulatorFixture.start([Self.networkMini4, Profiles.ipad2])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let ipad2 = await emulator.udid("ipad2")
            let host = try #require(try await emulator.daemon.networkAddress(udid: udid))
            #expect(host.hasPrefix("127."))

            let all = try await emulator.run("idevice_id", [])
            #expect(all.status == 0, "\(all)")
            #expect(all.stdout.contains("\(udid) (Network)"), "\(all)")
            #expect(all.stdout.contains("\(ipad2) (USB)"), "\(all)")
            let usbOnly = try await emulator.run("idevice_id", ["-l"])
            #expect(usbOnly.stdout.contains(ipad2), "\(usbOnly)")
            #expect(!usbOnly.stdout.contains(udid), "a network-only device is not on USB: \(usbOnly)")

            let before = try await emulator.daemon.networkConnections(udid: udid)
            let info = try await emulator.run("ideviceinfo", ["-n", "-u", udid, "-k", "ProductType"])
            #expect(info.status == 0 && info.stdout == "iPad5,1\n", "\(info)")
            // The handshake (TLS after StartSession) ran over TCP to the twin's own address.
            let name = try await emulator.run("ideviceinfo", ["-n", "-u", udid, "-k", "DeviceName"])
            #expect(name.status == 0 && name.stdout == "iPad mini 4\n", "\(name)")
            #expect(try await emulator.daemon.networkConnections(udid: udid) >= before + 2)

            let withoutN = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "ProductType"])
            #expect(withoutN.status != 0, "without -n the tools only pick USB devices: \(withoutN)")
            #expect(withoutN.output.contains("Device \(udid) not found"), "\(withoutN)")
        }

        @Test("ideviceinstaller -n installs, then -g upgrades in place: the app's data survives")
        func upgradeKeepsData() async throws {
            let emulator = try await EmulatorFixture.start([Self.networkMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let work = emulator.directory.appendingPathComponent("build")
            let bundleID = "com.hadashboard.app"
            let first = try TestBundles.makeIPA(
                from: TestBundles.makeApp(
                    in: work.appendingPathComponent("v1"), bundleID: bundleID, version: "41",
                    shortVersion: "1.0.0"),
                in: work.appendingPathComponent("v1"), name: "Dashboard")
            let second = try TestBundles.makeIPA(
                from: TestBundles.makeApp(
                    in: work.appendingPathComponent("v2"), bundleID: bundleID, version: "42",
                    shortVersion: "1.1.0"),
                in: work.appendingPathComponent("v2"), name: "Dashboard")

            let install = try await emulator.run("ideviceinstaller", ["-n", "-u", udid, "-i", first.path])
            #expect(install.status == 0 && install.stdout.contains("Install: Complete"), "\(install)")
            let container = try await emulator.daemon.appDataContainer(udid: udid, bundleIdentifier: bundleID)
            let settings = container.appendingPathComponent("Library/Preferences/\(bundleID).plist")
            try FileManager.default.createDirectory(
                at: settings.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("the device's own settings".utf8).write(to: settings)

            let upgrade = try await emulator.run("ideviceinstaller", ["-n", "-u", udid, "-g", second.path])
            #expect(upgrade.status == 0 && upgrade.stdout.contains("Upgrade: Complete"), "\(upgrade)")
            let installed = try await emulator.daemon.installedApps(udid: udid)
            #expect(installed.map(\.bundleVersion) == ["42"])
            #expect(
                (try? String(contentsOf: settings, encoding: .utf8)) == "the device's own settings",
                "an upgrade keeps the data container")
            let list = try await emulator.run("ideviceinstaller", ["-n", "-u", udid, "-l"])
            #expect(list.stdout.contains("\(bundleID), \"42\""), "\(list)")
        }

        @Test("plugged in and on Wi-Fi: two entries with the same serial, one per connection type")
        func listedTwice() async throws {
            var profile = Profiles.ipadMini4
            profile.connection = .usbAndNetwork
            let emulator = try await EmulatorFixture.start([profile])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let all = try await emulator.run("idevice_id", [])
            #expect(
                all.stdout.contains("\(udid) (USB)") && all.stdout.contains("\(udid) (Network)"), "\(all)")
            let usb = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "ProductType"])
            let network = try await emulator.run("ideviceinfo", ["-n", "-u", udid, "-k", "ProductType"])
            #expect(usb.stdout == "iPad5,1\n" && network.stdout == "iPad5,1\n", "\(usb)\n\(network)")
        }

        @Test("off the network: the entry goes and its address refuses at once; back on, it answers again")
        func leavesTheNetwork() async throws {
            let emulator = try await EmulatorFixture.start([Self.networkMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            try await emulator.daemon.setOnNetwork(false, udid: udid)
            let all = try await emulator.run("idevice_id", [])
            #expect(!all.stdout.contains(udid), "\(all)")
            let info = try await emulator.run(
                "ideviceinfo", ["-n", "-u", udid, "-k", "ProductType"], timeout: 10)
            #expect(info.status != 0 && !info.timedOut && info.seconds < 5, "\(info)")

            try await emulator.daemon.setOnNetwork(true, udid: udid)
            let back = try await emulator.run("ideviceinfo", ["-n", "-u", udid, "-k", "ProductType"])
            #expect(back.status == 0 && back.stdout == "iPad5,1\n", "\(back)")

            // The same through the control socket (what `hadeploy virtual` users have).
            let replies = try ControlAndEventsTests.control(
                emulator.directory,
                [
                    #"{"command":"setOnNetwork","udid":"mini4","onNetwork":false}"#,
                    #"{"command":"setOnNetwork","udid":"mini4"}"#,
                ])
            #expect(replies.first == #"{"ok":true}"#, "\(replies)")
            #expect(replies.last?.contains("needs") == true, "\(replies)")
            let gone = try await emulator.run("idevice_id", ["-n"])
            #expect(!gone.stdout.contains(udid), "\(gone)")
        }
    }
}
