import Foundation
import ImageCodec
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

@Suite(.serialized) struct DeveloperServicesTests {
    private func install(_ bundleID: String, on device: USBDevice, slices: [String] = ["arm64"]) async throws
    {
        let directory = try temporaryDirectory("dev")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = bundleID
        spec.slices = slices
        _ = try await device.install(artifact: try TestApps.makeIPA(spec, in: directory))
    }

    @Test func missingImageNamesTheFileThenMountScreenshotLaunchKill() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.developer
        let udid = await emulator.udid(name)

        // No DeviceSupport directory configured: the screenshot says which file is needed.
        let bare = try await emulator.connect(name, options: emulator.options(images: false))
        let missing = await #expect(throws: MobileDeviceError.self) { try await bare.screenshotPNG() }
        #expect(missing?.kind == .developerImageMissing)
        #expect(missing?.description.contains("15.8/DeveloperDiskImage.dmg") == true)

        let elsewhere = try temporaryDirectory("no-images")
        let lookedAt = await #expect(throws: MobileDeviceError.self) {
            try await bare.mountDeveloperImageIfNeeded(searchDirectories: [elsewhere])
        }
        #expect(lookedAt?.description.contains(elsewhere.path + "/15.8/DeveloperDiskImage.dmg") == true)

        let device = try await emulator.connect(name)
        let status = try await device.mountDeveloperImageIfNeeded()
        #expect(
            status
                == .mounted(
                    DeveloperImage(
                        image: emulator.developerImages.appendingPathComponent("15.8").appendingPathComponent(
                            "DeveloperDiskImage.dmg"),
                        signature: emulator.developerImages.appendingPathComponent("15.8")
                            .appendingPathComponent(
                                "DeveloperDiskImage.dmg.signature"))))
        #expect(try await device.mountDeveloperImageIfNeeded() == .alreadyMounted)
        let lookup = try await DebianTool.run(
            "ideviceimagemounter", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(lookup.output.contains("ImageSignature"), "\(lookup.output)")

        let png = try await device.screenshotPNG()
        let image = try ImageCodec.decode(png)
        #expect(ImageFormat.detect(png) == .png)
        #expect(image.width == 1536 && image.height == 2048)

        try await install("io.hadeploy.test.launch", on: device)
        let launched = try await device.launch(
            bundleID: "io.hadeploy.test.launch", arguments: ["-HADashboard", "lobby", "-token", "s3cr3t"],
            environment: ["HA_DEBUG": "1"], secrets: ["s3cr3t"])
        #expect(launched.executable == "Demo")
        #expect(launched.earlyStop == nil)
        #expect(!launched.output.contains("s3cr3t"))
        // Detached: the app keeps running after the debugger left.
        try await Task.sleep(for: .milliseconds(500))
        let running = try #require(try await emulator.daemon.runningApp(udid: udid))
        #expect(running.bundleIdentifier == "io.hadeploy.test.launch")
        #expect(Array(running.arguments.dropFirst()) == ["-HADashboard", "lobby", "-token", "s3cr3t"])
        #expect(running.environment.contains("HA_DEBUG=1"))

        // Restart: the running instance is killed, a new one started.
        _ = try await device.launch(bundleID: "io.hadeploy.test.launch", arguments: ["second"], restart: true)
        let second = try #require(try await emulator.daemon.runningApp(udid: udid))
        #expect(Array(second.arguments.dropFirst()) == ["second"])

        try await device.kill(bundleID: "io.hadeploy.test.launch")
        #expect(try await emulator.daemon.runningApp(udid: udid) == nil)

        let notInstalled = await #expect(throws: MobileDeviceError.self) {
            try await device.launch(bundleID: "io.hadeploy.test.absent")
        }
        #expect(notInstalled?.kind == .appNotInstalled)
    }

    @Test func crashAtLaunchIsReportedAndItsReportCopied() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.developer
        let udid = await emulator.udid(name)
        let device = try await emulator.connect(name)
        try await install("io.hadeploy.test.crash", on: device)
        let reports = try temporaryDirectory("reports")
        defer { try? FileManager.default.removeItem(at: reports) }

        let before = try await device.launch(bundleID: "io.hadeploy.test.crash")
        #expect(
            try await device.crashReports(since: before.launchedAt, process: "Demo", copyTo: reports).isEmpty)

        try await emulator.daemon.inject(.crashOnLaunch, udid: udid)
        let crashed = try await device.launch(bundleID: "io.hadeploy.test.crash")
        #expect(crashed.earlyStop != nil)
        let copied = try await device.crashReports(
            since: crashed.launchedAt, process: crashed.executable, copyTo: reports)
        #expect(copied.count == 1)
        let text = try String(contentsOf: try #require(copied.first), encoding: .utf8)
        #expect(
            text.hasPrefix("{") && text.contains("\"app_name\":\"Demo\""), "iOS 15 .ips: JSON metadata line")
        #expect(copied.first?.lastPathComponent.hasPrefix("Demo-") == true)
        // Reports older than the launch are not picked up again.
        let later = crashed.launchedAt.addingTimeInterval(60)
        #expect(try await device.crashReports(since: later, process: "Demo", copyTo: reports).isEmpty)
        try await emulator.daemon.clearFaults(udid: udid)
    }

    @Test func aDeploysStepsShareOneLockdownSessionUntilTheDeviceEndsIt() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.developer
        let udid = await emulator.udid(name)
        let reports = try temporaryDirectory("sessions")
        defer { try? FileManager.default.removeItem(at: reports) }
        _ = try await emulator.connect(name).mountDeveloperImageIfNeeded()
        let before = try await emulator.daemon.lockdownSessions(udid: udid)

        // connect, mount, install, launch, crash check: one session (one TLS handshake), not five.
        // The twin shares this process with the suite's other tests on two cores: its answer to the
        // kept session's check may take longer than a device's 2 s, and a new session is then right.
        var timeouts = USBTimeouts()
        timeouts.keptSession = .seconds(30)
        let device = try await emulator.connect(name, options: emulator.options(timeouts: timeouts))
        #expect(try await device.mountDeveloperImageIfNeeded() == .alreadyMounted)
        try await install("io.hadeploy.test.sessions", on: device)
        let launched = try await device.launch(bundleID: "io.hadeploy.test.sessions", restart: true)
        // (Another test's crash of the same executable may be within the clock tolerance: not counted.)
        _ = try await device.crashReports(
            since: launched.launchedAt, process: launched.executable, copyTo: reports)
        #expect(try await emulator.daemon.lockdownSessions(udid: udid) == before + 1)

        // The device ends the session (a reboot here): the next step opens a new one and works.
        try await emulator.daemon.reboot(udid: udid)
        #expect(try await device.installedApp(bundleID: "io.hadeploy.test.sessions") != nil)
        #expect(try await emulator.daemon.lockdownSessions(udid: udid) == 1)
    }

    @Test func rebootUnmountsTheImageAndTheNextScreenshotMountsItAgain() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.developer
        let udid = await emulator.udid(name)
        let device = try await emulator.connect(name)
        _ = try await device.screenshotPNG()
        #expect(await emulator.daemon.devices().first { $0.udid == udid }?.developerImageMounted == true)

        try await emulator.daemon.reboot(udid: udid)
        #expect(await emulator.daemon.devices().first { $0.udid == udid }?.developerImageMounted == false)
        // The device is away for a second: the screenshot waits for it, finds the image gone, mounts it again.
        let png = try await device.screenshotPNG()
        #expect(ImageFormat.detect(png) == .png)
        #expect(await emulator.daemon.devices().first { $0.udid == udid }?.developerImageMounted == true)
    }

    @Test func iPad2OnIOS9LaunchesOverPlainDebugserverAndItsTIFFBecomesPNG() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.ipad2
        let udid = await emulator.udid(name)
        let device = try await emulator.connect(name)
        let png = try await device.screenshotPNG()
        #expect(ImageFormat.detect(png) == .png)
        let image = try ImageCodec.decode(png)
        #expect(image.width == 768 && image.height == 1024)
        try await install("io.hadeploy.test.legacy", on: device, slices: ["armv7"])
        _ = try await device.launch(bundleID: "io.hadeploy.test.legacy", arguments: ["-kiosk"])
        let running = try #require(try await emulator.daemon.runningApp(udid: udid))
        #expect(running.bundleIdentifier == "io.hadeploy.test.legacy")
    }

    @Test func arm64OnlyBuildIsRefusedForTheIPad2BeforeUploading() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.ipad2)
        let directory = try temporaryDirectory("arch")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.arch"
        spec.payloadBytes = 2 * 1_048_576
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await emulator.connect(SharedEmulator.Device.ipad2)
        let log = ProgressLog()
        let error = await #expect(throws: MobileDeviceError.self) {
            try await device.install(artifact: ipa, progress: { log.append($0) })
        }
        #expect(error?.kind == .architectureMismatch)
        #expect(error?.description.contains("only arm64") == true)
        #expect(error?.description.contains("armv7") == true)
        #expect(error?.description.contains("iPad 2 (UDID \(udid))") == true)
        #expect(log.events.isEmpty)
        let listed = try await DebianTool.run(
            "ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(!listed.output.contains(spec.bundleID))

        // A build with an armv7 slice goes in.
        spec.slices = ["armv7", "arm64"]
        spec.payloadBytes = 0
        #expect(try await device.install(artifact: try TestApps.makeIPA(spec, in: directory)) == .installed)
    }
}
