import Foundation
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// An artifact is untrusted input: the names in its Info.plist must never become a path outside
/// hadeploy's own staging folder. `../DCIM` as a bundle id once made the pre-upload cleanup remove
/// `PublicStaging/../DCIM` — the camera roll on a real device.
@Suite(.serialized) struct HostileArtifactTests {
    @Test(arguments: [
        "../DCIM", "..", "com.example/../../DCIM", "com..example", "com.example.app\u{0}x", "DCIM",
    ])
    func aBundleIdThatIsNotReverseDNSIsRefusedAndTheCameraRollSurvives(_ identifier: String) async throws {
        let emulator = try await SharedEmulator.shared.context()
        let media = emulator.staging(SharedEmulator.Device.install).deletingLastPathComponent()
        let photo = media.appendingPathComponent("DCIM/100APPLE/IMG_0001.JPG")
        try FileManager.default.createDirectory(
            at: photo.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("a photo the user took".utf8).write(to: photo)

        let directory = try temporaryDirectory("hostile")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = identifier
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let device = try await emulator.connect(SharedEmulator.Device.install)

        await #expect {
            _ = try await device.install(artifact: ipa)
        } throws: { error in
            guard let error = error as? MobileDeviceError, error.kind == .invalidArtifact else {
                return false
            }
            return "\(error)".contains("bundle identifier")
        }
        #expect(
            try Data(contentsOf: photo) == Data("a photo the user took".utf8),
            "the camera roll must be untouched")
    }

    @Test func anExecutableNameWithAPathIsRefused() async throws {
        let directory = try temporaryDirectory("hostile-exe")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        let infoURL = app.appendingPathComponent("Info.plist")
        var info = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: infoURL), format: nil)
                as? [String: Any])
        info["CFBundleExecutable"] = "../../Demo"
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(
            to: infoURL)
        #expect {
            _ = try AppArtifact.inspect(app)
        } throws: { error in
            "\(error)".contains("CFBundleExecutable") && "\(error)".contains("'/'")
        }
    }
}
