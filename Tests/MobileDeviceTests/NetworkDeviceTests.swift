import Foundation
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// A Wi-Fi-synced device (the old script's `ideviceinstaller -n` iPad mini 4), reached through
/// usbmuxd's network lookup: libimobiledevice connects straight to the twin's own address.
@Suite(.serialized) struct NetworkDeviceTests {
    func networkOptions(
        _ emulator: SharedEmulator.Context, timeouts: USBTimeouts = USBTimeouts()
    ) -> USBDeviceOptions {
        var options = emulator.options(timeouts: timeouts)
        options.network = true
        return options
    }

    @Test func theNetworkLookupConnectsAndAnUpgradeKeepsTheAppsData() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let directory = try temporaryDirectory("wifi")
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try await emulator.daemon.networkConnections(udid: udid)
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator))
        #expect(await device.info.identity.name == "iPad mini 4")

        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.wifi"
        spec.bundleVersion = "1"
        for version in ["v1", "v2"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(version), withIntermediateDirectories: true)
        }
        let first = try TestApps.makeIPA(spec, in: directory.appendingPathComponent("v1"))
        #expect(try await device.install(artifact: first) == .installed)
        let container = try await emulator.daemon.appDataContainer(
            udid: udid, bundleIdentifier: spec.bundleID)
        let settings = container.appendingPathComponent("Library/Preferences/\(spec.bundleID).plist")
        try FileManager.default.createDirectory(
            at: settings.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("kept".utf8).write(to: settings)

        spec.bundleVersion = "2"
        let second = try TestApps.makeIPA(spec, in: directory.appendingPathComponent("v2"))
        #expect(try await device.install(artifact: second) == .installed)
        #expect(try await emulator.daemon.installedApps(udid: udid).map(\.bundleVersion) == ["2"])
        #expect(
            (try? String(contentsOf: settings, encoding: .utf8)) == "kept",
            "installation_proxy Upgrade keeps the data container")
        // Every lockdown and service connection went to the twin's address, not through usbmuxd.
        #expect(try await emulator.daemon.networkConnections(udid: udid) > before + 4)
    }

    @Test func eachLookupFindsOnlyItsOwnKindOfEntry() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let wifi = await emulator.udid(SharedEmulator.Device.wifi)
        let plugged = await emulator.udid(SharedEmulator.Device.install)

        // 10 s: long enough for usbmuxd (the twin, in this process) to answer at least once while the
        // suite's other tests keep the process busy (3 s and 5 s were not, once each, on two loaded
        // cores). The wait is the whole deadline: the device never shows up as asked.
        let usbOnly = await #expect(throws: MobileDeviceError.self) {
            _ = try await USBTransport.connect(
                udid: wifi, deadline: .now + .seconds(10), options: emulator.options())
        }
        #expect(usbOnly?.kind == .notConnected)
        #expect(usbOnly?.description.contains("\(wifi) (Network)") == true, "\(usbOnly?.description ?? "")")
        #expect(usbOnly?.description.contains("Plug the device in") == true)

        let networkOnly = await #expect(throws: MobileDeviceError.self) {
            _ = try await USBTransport.connect(
                udid: plugged, deadline: .now + .seconds(5), options: networkOptions(emulator))
        }
        #expect(networkOnly?.kind == .notConnected)
        let text = networkOnly?.description ?? ""
        #expect(text.contains("not found on the network"), "\(text)")
        #expect(text.contains("asleep or off the network: wake it"), "\(text)")
        #expect(text.contains("same network") && text.contains("Wi-Fi sync is on"), "\(text)")
    }

    @Test func aDeviceThatLeavesTheNetworkMidInstallIsReportedAtOnce() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let directory = try temporaryDirectory("wifi-gone")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.wifigone"
        spec.payloadBytes = 8 * 1_048_576
        let ipa = try TestApps.makeIPA(spec, in: directory)
        var timeouts = USBTimeouts()
        timeouts.install = .seconds(120)
        timeouts.reattach = .seconds(2)
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator, timeouts: timeouts))
        // 1 MB/s: the upload takes about 8 s, so the device leaves while it runs.
        try await emulator.daemon.inject(.throttle(bytesPerSecond: 1_000_000), udid: udid)
        let install = Task { try await device.install(artifact: ipa) }
        try await Task.sleep(for: .seconds(1.5))
        let left = ContinuousClock.now
        try await emulator.daemon.setOnNetwork(false, udid: udid)
        let result = await install.result
        let noticed = ContinuousClock.now - left
        try await emulator.daemon.clearFaults(udid: udid)
        try await emulator.daemon.setOnNetwork(true, udid: udid)

        let error = try #require(
            { () -> MobileDeviceError? in
                if case .failure(let error as MobileDeviceError) = result { return error }
                return nil
            }(), "\(result)")
        // Within the waits for the device to come back (2 s each: the retry, and the clean-up of the
        // partial upload before and after it), never the install's 120 s deadline.
        #expect(noticed < .seconds(10), "noticed only after \(noticed)")
        #expect(error.description.contains("not found on the network"), "\(error.description)")
        #expect(error.description.contains("nothing was installed"), "\(error.description)")
        #expect(error.description.contains("asleep or off the network: wake it"), "\(error.description)")
        #expect(
            try await emulator.daemon.installedApps(udid: udid).allSatisfy {
                $0.bundleIdentifier != spec.bundleID
            })
    }

    /// A device that goes quiet on Wi-Fi (asleep, out of range: no reset, no answer) ends the step at
    /// its deadline, with what to check on the network.
    @Test func aWiFiDeviceThatGoesQuietEndsTheStepAtItsDeadline() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let directory = try temporaryDirectory("wifi-quiet")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.wifiquiet"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        var timeouts = USBTimeouts()
        timeouts.install = .seconds(3)
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator, timeouts: timeouts))
        try await emulator.daemon.inject(.stall(at: .install), udid: udid)
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) { try await device.install(artifact: ipa) }
        try await emulator.daemon.clearFaults(udid: udid)
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(error?.kind == .deadlineExceeded)
        #expect(
            error?.description.contains("not complete within 3 s") == true, "\(String(describing: error))")
        #expect(error?.description.contains("asleep or off the network: wake it") == true)
    }

    /// A real device is quiet for seconds while it verifies a large app. libimobiledevice 1.3.0 reports
    /// a receive timeout on a network connection as an unknown error; the install must wait through
    /// it, not call the connection broken.
    @Test func aQuietVerificationOverWiFiIsWaitedThrough() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let directory = try temporaryDirectory("wifi-slow")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.wifislow"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator))
        try await emulator.daemon.inject(.slowVerification(seconds: 3.5), udid: udid)
        let result: Result<USBInstallOutcome, any Error>
        do { result = .success(try await device.install(artifact: ipa)) } catch { result = .failure(error) }
        try await emulator.daemon.clearFaults(udid: udid)
        #expect(try result.get() == .installed)
        #expect(
            try await emulator.daemon.installedApps(udid: udid).contains {
                $0.bundleIdentifier == spec.bundleID
            })
    }

    /// libimobiledevice 1.3.0 leaves a network connection's socket non-blocking: a write the socket
    /// cannot take at once comes back short. A large upload over Wi-Fi still arrives whole.
    @Test func aLargeAppUploadsWholeOverWiFi() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let directory = try temporaryDirectory("wifi-large")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.wifilarge"
        spec.payloadBytes = 24 * 1_048_576
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator))
        #expect(try await device.install(artifact: ipa) == .installed)
        #expect(
            try await emulator.daemon.installedApps(udid: udid).contains {
                $0.bundleIdentifier == spec.bundleID
            })
    }

    /// A real Developer Disk Image is tens of megabytes: over Wi-Fi it goes up whole too, and the
    /// screenshot service answers over the network as well.
    @Test func aLargeDeveloperImageMountsOverWiFi() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.wifi)
        let images = try temporaryDirectory("wifi-ddi")
        defer { try? FileManager.default.removeItem(at: images) }
        try DeveloperDiskImageFixture.write(
            in: images.appendingPathComponent("15.8"), image: Data(repeating: 0x5A, count: 20 * 1_048_576),
            signature: Data(repeating: 0xA5, count: 128))
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: networkOptions(emulator))
        let status = try await device.mountDeveloperImageIfNeeded(searchDirectories: [images])
        #expect(status != .alreadyMounted, "\(status)")
        #expect(await emulator.daemon.devices().first { $0.udid == udid }?.developerImageMounted == true)
        let png = try await device.screenshotPNG()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }
}
