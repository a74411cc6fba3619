import Foundation
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// Collects progress events from the install callback.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [USBInstallProgress] = []

    func append(_ event: USBInstallProgress) { lock.withLock { items.append(event) } }
    var events: [USBInstallProgress] { lock.withLock { items } }
}

@Suite(.serialized) struct InstallTests {
    @Test func ipaInstallsWithProgressAndIdeviceinstallerListsIt() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.install)
        let directory = try temporaryDirectory("install")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.ipa"
        spec.payloadBytes = 3 * 1_048_576 + 12_345
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await emulator.connect(SharedEmulator.Device.install)
        _ = try await device.uninstall(bundleID: spec.bundleID)

        let log = ProgressLog()
        let outcome = try await device.install(artifact: ipa, progress: { log.append($0) })
        #expect(outcome == .installed)
        let uploads = log.events.filter { $0.phase == .uploading }
        let size = (try FileManager.default.attributesOfItem(atPath: ipa.path)[.size] as! NSNumber).int64Value
        #expect(uploads.last?.bytesDone == size)
        #expect(uploads.last?.percent == 100)
        #expect(uploads.map(\.bytesDone) == uploads.map(\.bytesDone).sorted())
        #expect(uploads.count >= 5)  // 1 MiB chunks
        #expect(log.events.last?.phase == .installing)
        #expect(log.events.last?.status == "Complete")

        let listed = try await DebianTool.run(
            "ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(listed.output.contains("io.hadeploy.test.ipa, \"1\", \"Demo\""), "\(listed.output)")
        #expect(
            try FileManager.default.contentsOfDirectory(
                atPath: emulator.staging(SharedEmulator.Device.install).path
            ).isEmpty)
    }

    @Test func unchangedRedeployIsSkippedFastUnlessForced() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let directory = try temporaryDirectory("skip")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.skip"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await emulator.connect(SharedEmulator.Device.install)
        _ = try await device.uninstall(bundleID: spec.bundleID)
        #expect(try await device.install(artifact: ipa) == .installed)

        // Nothing travels: no progress event at all. (Under a second on an idle machine, see
        // BENCHMARKS.md §2; the bound here is loose for a loaded 2-core CI machine.)
        let log = ProgressLog()
        let started = ContinuousClock.now
        #expect(try await device.install(artifact: ipa, progress: { log.append($0) }) == .skippedUnchanged)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(log.events.isEmpty)

        #expect(try await device.install(artifact: ipa, force: true) == .installed)

        // Same version and build, different content: installed again.
        spec.salt = "changed"
        let rebuilt = try TestApps.makeIPA(spec, in: directory)
        #expect(try await device.install(artifact: rebuilt) == .installed)
        #expect(try await device.install(artifact: rebuilt) == .skippedUnchanged)
    }

    @Test func appDirectoryInstallsAndUninstalls() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.install)
        let directory = try temporaryDirectory("appdir")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.appdir"
        spec.bundleVersion = "42"
        let app = try TestApps.makeApp(spec, in: directory)
        try FileManager.default.createSymbolicLink(
            atPath: app.appendingPathComponent("Current").path, withDestinationPath: "Base.lproj")
        let device = try await emulator.connect(SharedEmulator.Device.install)
        #expect(try await device.install(artifact: app) == .installed)
        let apps = try await emulator.daemon.installedApps(udid: udid)
        #expect(apps.contains { $0.bundleIdentifier == spec.bundleID && $0.packageType == "developer" })
        let listed = try await DebianTool.run(
            "ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(listed.output.contains("io.hadeploy.test.appdir, \"42\""), "\(listed.output)")

        #expect(try await device.uninstall(bundleID: spec.bundleID) == .removed)
        let after = try await DebianTool.run("ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(!after.output.contains("io.hadeploy.test.appdir"), "\(after.output)")
        #expect(try await device.uninstall(bundleID: spec.bundleID) == .wasNotInstalled)
    }

    @Test func iOS18InstallsButCannotLaunchOrScreenshot() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let directory = try temporaryDirectory("ios18")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.modern"
        let device = try await emulator.connect(SharedEmulator.Device.iphone18)
        #expect(try await device.install(artifact: try TestApps.makeIPA(spec, in: directory)) == .installed)
        let launch = await #expect(throws: MobileDeviceError.self) {
            try await device.launch(bundleID: spec.bundleID)
        }
        #expect(launch?.kind == .unsupportedOnThisIOS)
        #expect(launch?.description.contains("devicectl") == true)
        #expect(launch?.description.contains("pymobiledevice3") == true)
        let screenshot = await #expect(throws: MobileDeviceError.self) { try await device.screenshotPNG() }
        #expect(screenshot?.kind == .unsupportedOnThisIOS)
        #expect(try await device.uninstall(bundleID: spec.bundleID) == .removed)
    }
}
