import Foundation
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("usbmuxd and lockdownd against the Debian tools")
    struct UsbmuxdLockdownTests {
        @Test("idevice_id lists every virtual device; idevice_id UDID prints its name")
        func listsDevices() async throws {
            let emulator = try await EmulatorFixture.start([
                Profiles.ipad2, Profiles.ipadMini4, Profiles.ipadMini5, Profiles.iphone16,
            ])
            defer { Task { await emulator.stop() } }
            let devices = await emulator.daemon.devices()
            #expect(devices.count == 4)
            let list = try await emulator.run("idevice_id", ["-l"])
            #expect(list.status == 0, "\(list)")
            let listed = Set(list.stdout.split(separator: "\n").map(String.init))
            #expect(listed == Set(devices.map(\.udid)), "\(list)")
            // Generation-specific UDID formats: 40 hex digits before the A12, <chip>-<ECID> after.
            let ipad2 = await emulator.udid("ipad2")
            #expect(ipad2.count == 40 && ipad2.allSatisfy(\.isHexDigit))
            let iphone = await emulator.udid("iphone16")
            #expect(iphone.hasPrefix("00008140-") && iphone.count == 25)
            let name = try await emulator.run("idevice_id", [ipad2])
            #expect(name.status == 0 && name.stdout.contains("iPad 2"), "\(name)")
        }

        @Test("ideviceinfo reads identity over TLS 1.0 (iOS 9) and modern TLS (iOS 15, 18), via UNIX and TCP")
        func deviceInfo() async throws {
            for tcp in [false, true] {
                let emulator = try await EmulatorFixture.start(
                    [Profiles.ipad2, Profiles.ipadMini4, Profiles.iphone16], tcp: tcp)
                defer { Task { await emulator.stop() } }
                for (name, type, version, build) in [
                    ("ipad2", "iPad2,1", "9.3.5", "13G36"), ("mini4", "iPad5,1", "15.8", "19H370"),
                    ("iphone16", "iPhone17,2", "18.6.2", "22G100"),
                ] {
                    let udid = await emulator.udid(name)
                    let info = try await emulator.run("ideviceinfo", ["-u", udid])
                    #expect(info.status == 0, "\(info)")
                    #expect(info.stdout.contains("ProductType: \(type)"), "\(info)")
                    #expect(info.stdout.contains("ProductVersion: \(version)"), "\(info)")
                    #expect(info.stdout.contains("BuildVersion: \(build)"), "\(info)")
                    #expect(info.stdout.contains("UniqueDeviceID: \(udid)"), "\(info)")
                    #expect(info.stdout.contains("DevicePublicKey: "), "\(info)")
                    let key = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "CPUArchitecture"])
                    #expect(key.stdout == (name == "ipad2" ? "armv7\n" : "arm64\n"), "\(key)")
                }
                let udid = await emulator.udid("mini4")
                let disk = try await emulator.run("ideviceinfo", ["-u", udid, "-q", "com.apple.disk_usage"])
                #expect(disk.status == 0 && disk.stdout.contains("TotalDiskCapacity: "), "\(disk)")
                let buid = try await emulator.run("idevicepair", ["systembuid"])
                #expect(buid.status == 0 && buid.stdout.count == 37, "\(buid)")
                let hostID = try await emulator.run("idevicepair", ["-u", udid, "hostid"])
                #expect(hostID.status == 0 && hostID.stdout.count == 37, "\(hostID)")
            }
        }
    }
}
