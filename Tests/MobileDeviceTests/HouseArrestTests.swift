import Foundation
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// libimobiledevice's house_arrest client (through the wrapper) against the twin's service: an
/// app's data container, and the errors a device gives.
@Suite(.serialized) struct HouseArrestTests {
    @Test func readsAFileOfTheAppsContainerAndNothingElse() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let udid = await emulator.udid(SharedEmulator.Device.container)
        let directory = try temporaryDirectory("house-arrest")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.container"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await emulator.connect(SharedEmulator.Device.container)
        _ = try await device.uninstall(bundleID: spec.bundleID)
        #expect(try await device.install(artifact: ipa) == .installed)

        // What the app wrote into its container (the twin keeps it on the host).
        let container = try await emulator.daemon.appDataContainer(
            udid: udid, bundleIdentifier: spec.bundleID)
        let documents = container.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        // The app rotates ha-log.txt at 2 MB: a full one is read in 32 reads of 64 KiB, each one
        // reply libimobiledevice must take whole however the bytes arrive.
        let text =
            "\n=== HA Dashboard log session ===\n"
            + String(repeating: "+    1.0ms  INFO [conn] x\n", count: 2 << 20 / 27)
        try Data(text.utf8).write(to: documents.appendingPathComponent("ha-log.txt"))

        let read = try await device.appDataFile(bundleID: spec.bundleID, path: "Documents/ha-log.txt")
        #expect(read == Data(text.utf8))
        #expect(
            try await device.appDataFile(bundleID: spec.bundleID, path: "Documents/ha-log-prev.txt") == nil)
        // AFC is rooted at the container: a path that climbs out of it is refused.
        await #expect(throws: MobileDeviceError.self) {
            _ = try await device.appDataFile(bundleID: spec.bundleID, path: "../../state.json")
        }

        // An app the device does not have: InstallationLookupFailed, said as what to do.
        await #expect {
            _ = try await device.appDataFile(
                bundleID: "io.hadeploy.not.installed", path: "Documents/ha-log.txt")
        } throws: { error in
            guard let error = error as? MobileDeviceError else { return false }
            return error.kind == .appNotInstalled && error.reason.contains("InstallationLookupFailed")
                && error.nextStep.contains("development-signed")
        }

        // Uninstalling removes the app's data, as on a device.
        _ = try await device.uninstall(bundleID: spec.bundleID)
        #expect(!FileManager.default.fileExists(atPath: documents.path))
    }
}
