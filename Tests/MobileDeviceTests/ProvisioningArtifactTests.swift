import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import MobileDevice

/// A signed build's provisioning profile, read from the artifact (an `.app` or an `.ipa`) out of its
/// CMS envelope, as OpenSSL wrote it.
@Suite struct ProvisioningArtifactTests {
    @Test func theProfileOfAnAppOrAnIPAIsReadAndAForgedOneIsRefused() async throws {
        let directory = try temporaryDirectory("profile-artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = ProvisioningProfileFixture.Options(
            applicationIdentifier: "HADEPLOYDM.io.hadeploy.test.demo", devices: ["00008030-001A2D3E4F500C2E"])
        options.name = "Wall iPads"
        var spec = TestApps.Spec()
        spec.profile = try await ProvisioningProfileFixture.make(options)

        for artifact in [
            try TestApps.makeApp(spec, in: directory), try TestApps.makeIPA(spec, in: directory),
        ] {
            let app = try AppArtifact.inspect(artifact, hashing: false, in: TestHost.fileSystem)
            let profile = try #require(app.provisioning, "\(artifact.lastPathComponent)")
            #expect(profile.name == "Wall iPads" && profile.uuid == options.uuid)
            #expect(profile.provisionedDevices == ["00008030-001A2D3E4F500C2E"])
            #expect(profile.applicationIdentifier == "HADEPLOYDM.io.hadeploy.test.demo")
            #expect(profile.teamIdentifiers == ["HADEPLOYDM"])
        }

        spec.profile = Data("<plist>not signed data</plist>".utf8)
        spec.name = "Forged"
        let forged = try TestApps.makeApp(spec, in: directory)
        let error = #expect(throws: MobileDeviceError.self) {
            try AppArtifact.inspect(forged, hashing: false, in: TestHost.fileSystem)
        }
        #expect(error?.reason.contains("not a provisioning profile") == true, "\(String(describing: error))")

        spec.profile = nil
        spec.name = "Unsigned"
        #expect(
            try AppArtifact.inspect(
                try TestApps.makeApp(spec, in: directory), hashing: false, in: TestHost.fileSystem
            ).provisioning == nil)
    }
}
