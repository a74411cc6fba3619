import DeviceSpec
import Foundation
import Testing
import ZIPFoundation

@testable import HADeployKit

struct ArtifactTests {
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-art-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func flavour(_ name: String, _ archs: [Arch], sdk: String = "iphoneos") -> Flavour {
        Flavour(
            name: name, xcode: nil, archs: archs, deploymentTarget: "9.0", sdk: sdk, configuration: "Release",
            scheme: nil, settings: [:], location: .init(file: "devices.yaml", line: 1))
    }

    @Test(arguments: [[Arch.armv7, .arm64], [.arm64], [.x86_64]])
    func demoBundlesCarryExactlyTheFlavoursSlices(archs: [Arch]) throws {
        let root = try temporaryDirectory()
        let built = try DemoAppBuilder().build(
            flavour: flavour("f", archs), marketingVersion: "1.4.0", buildNumber: 42, into: root)
        let inspected = try ArtifactInspector().inspect(URL(fileURLWithPath: built.path), flavour: "f")
        #expect(inspected.archs == archs.map(\.rawValue))
        #expect(inspected.bundleID == "com.example.hadashboard")
        #expect(inspected.marketingVersion == "1.4.0")
        #expect(inspected.buildNumber == "42")
    }

    @Test func anIpaIsReadFromItsPayload() throws {
        let root = try temporaryDirectory()
        let built = try DemoAppBuilder().build(
            flavour: flavour("legacy", [.armv7, .arm64]), marketingVersion: "2.0", buildNumber: 3, into: root)
        let payload = root.appendingPathComponent("ipa/Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: built.path), to: payload.appendingPathComponent("HADashboard.app"))
        let ipa = root.appendingPathComponent("HADashboard.ipa")
        try FileManager.default.zipItem(at: payload, to: ipa, shouldKeepParent: true)
        let inspected = try ArtifactInspector().inspect(ipa, flavour: "legacy")
        #expect(inspected.archs == ["armv7", "arm64"])
        #expect(inspected.marketingVersion == "2.0")
    }

    @Test func notAZipIsAClearError() throws {
        let root = try temporaryDirectory()
        let bogus = root.appendingPathComponent("broken.ipa")
        try Data("this is not a zip".utf8).write(to: bogus)
        #expect {
            try ArtifactInspector().inspect(bogus, flavour: "modern")
        } throws: { error in
            "\(error)".contains("broken.ipa: it is not a readable zip archive")
        }
    }
}
