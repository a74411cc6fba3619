import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

@Suite struct AppleDeviceDiscoveryTests {
    @Test func onMacOSSimulatorsAndDevicesWithTheirBackends() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: "xcrun", arguments: ["simctl", "list", "-j", "devices"],
                stdout: try AppleFixture.text("simctl-list-devices.json")),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "list", "devices", "--json-output", ScriptedRunner.any, "--timeout", "30",
                ],
                effect: AppleFixture.writes("devicectl-list-devices.json", at: "--json-output")),
        ])
        let report = await AppleDeviceDiscovery(
            host: .macOS, runner: runner, rosettaSimConfigured: false, scratchDirectory: folder.url,
            fileSystem: TestHost.fileSystem
        ).discover()
        let rows = report.devices.map { "\($0.name) | \($0.os) | \($0.backend) | \($0.note ?? "-")" }
        #expect(
            rows == [
                "iPad (5th generation) | iOS 10.3 | rosettasim | set ROSETTASIM_CTL in .env",
                "Wall panel | iOS 17.5 | simctl | -",
                "iPad (10th generation) | iOS 17.5 | simctl | -",
                "iPhone 15 Pro | iOS 17.5 | simctl | -",
                "iPad Pro 11-inch (M4) | iOS 18.2 | simctl | -",
                "iPad Pro | iOS 9.3 | rosettasim | set ROSETTASIM_CTL in .env",
                "iPad mini 5 | iOS 26.0 | devicectl | -",
                "iPhone 16 Pro Max | iOS 18.6 | devicectl | -",
                "iPad mini 4 | iOS 15.8.3 | usb | turn on Developer Mode",
            ])
        #expect(report.devices.allSatisfy { $0.os.hasPrefix("iOS") })
        #expect(!report.devices.contains { $0.name == "iPad (9th generation)" })
        // The paired Apple Watch devicectl lists is no iOS device (it showed as "iOS 11.5").
        #expect(!report.devices.contains { $0.name == "Kitchen watch" })
        #expect(report.notes.isEmpty)
    }

    /// With `xcode-select` on an old Xcode (13.2.1 for armv7), `xcrun devicectl` does not exist:
    /// discovery runs simctl and devicectl from `XCODE_MODERN` when it is set.
    @Test func discoveryAsksTheModernXcode() {
        #expect(AppleDeviceDiscovery.developerDirectory([:]) == nil)
        #expect(AppleDeviceDiscovery.developerDirectory(["XCODE_MODERN": ""]) == nil)
        let developer = AppleDeviceDiscovery.developerDirectory(["XCODE_MODERN": "/Applications/Xcode-26.app"]
        )
        #expect(developer == "/Applications/Xcode-26.app/Contents/Developer")
        let discovery = AppleDeviceDiscovery(
            host: .macOS, runner: ScriptedRunner([]), rosettaSimConfigured: false,
            scratchDirectory: URL(fileURLWithPath: "/tmp"), fileSystem: TestHost.fileSystem
        ).using(developerDirectory: developer)
        #expect(discovery.simctl.listDevices().environment["DEVELOPER_DIR"] == developer)
        #expect(
            discovery.devicectl.listDevices(jsonOutput: "/tmp/x.json", timeout: 30).environment[
                "DEVELOPER_DIR"]
                == developer)
    }

    @Test func onLinuxIOS17DevicesThroughPymobiledevice3() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: "pymobiledevice3", arguments: ["usbmux", "list"],
                stdout: try AppleFixture.text("pymobiledevice3-usbmux-list.json"))
        ])
        let report = await AppleDeviceDiscovery(
            host: .linux, runner: runner, rosettaSimConfigured: false, scratchDirectory: folder.url,
            fileSystem: TestHost.fileSystem
        ).discover()
        #expect(report.devices.map(\.name) == ["iPhone 16 Pro Max", "iPad mini 5"])
        #expect(report.devices.allSatisfy { $0.backend == "pymobiledevice3" && $0.kind == .device })
        #expect(report.notes == ["simulators and devicectl need macOS with Xcode; not listed on this host"])
    }

    @Test func onLinuxWithoutPymobiledevice3ItSaysHowToGetIt() async throws {
        let folder = try TemporaryFolder()
        let report = await AppleDeviceDiscovery(
            host: .linux, runner: TestHost.runner,
            pymobiledevice3: PyMobileDevice3Commands(
                executable: "pymobiledevice3-absent-\(UUID().uuidString.prefix(6))"),
            rosettaSimConfigured: false, scratchDirectory: folder.url,
            fileSystem: TestHost.fileSystem
        ).discover()
        #expect(report.devices.isEmpty)
        #expect(report.notes.count == 2)
        #expect(report.notes[1].contains("pymobiledevice3 is not installed"))
        #expect(
            report.notes[1].contains(
                "`pip install pymobiledevice3` (no root, no tunneld: its own userspace tunnel)"))
    }
}
