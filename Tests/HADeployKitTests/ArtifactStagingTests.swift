import DeviceSpec
import Foundation
import HADeployCore
import TestSupport
import Testing
import ZIPFoundation

@testable import DeployModel
@testable import HADeployBuild
@testable import HADeployDrivers
@testable import HADeployKit

/// Each `.ipa` that SSH devices need is unpacked once per run, into a folder of its own, and removed
/// when the run ends.
struct ArtifactStagingTests {
    func ipa(in root: URL, minimumOS: String = "9.0") throws -> Artifact {
        let flavour = Flavour(
            name: "legacy", xcode: nil, archs: [.armv7, .arm64], deploymentTarget: minimumOS, sdk: "iphoneos",
            configuration: "Release", scheme: nil, settings: [:],
            location: .init(file: "devices.yaml", line: 1))
        let built = try DemoAppBuilder().build(
            flavour: flavour, marketingVersion: "2.0", buildNumber: 3,
            into: root.appendingPathComponent("build"), now: Date(), in: TestHost.fileSystem)
        let payload = root.appendingPathComponent("ipa/Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: built.path), to: payload.appendingPathComponent("HADashboard.app"))
        let ipa = root.appendingPathComponent("HADashboard.ipa")
        try FileManager.default.zipItem(at: payload, to: ipa, shouldKeepParent: true)
        return try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(ipa, flavour: "legacy")
    }

    @Test func oneIpaForTwoFlavoursIsUnpackedOnceAndRemovedAtTheEnd() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "staging-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let artifact = try ipa(in: root)
        #expect(artifact.minimumOSVersion == "9.0")
        var other = artifact
        other.flavour = "modern"
        let base = root.appendingPathComponent("state/artifacts")
        // A run SIGKILLed earlier left its folder; its process is gone.
        let stale = base.appendingPathComponent("old-run")
        try FileManager.default.createDirectory(
            at: stale.appendingPathComponent("app-1"), withIntermediateDirectories: true)
        try Data("999999999\n".utf8).write(to: stale.appendingPathComponent("owner.pid"))

        let staging = try ArtifactStaging.prepare(
            ["legacy": artifact, "modern": other, "usb-only": artifact],
            needingBundles: ["legacy", "modern"],
            under: base, runID: "run-1", in: TestHost.fileSystem)
        let bundle = try #require(staging.artifacts["legacy"]?.bundlePath)
        #expect(staging.artifacts["modern"]?.bundlePath == bundle)
        #expect(staging.artifacts["usb-only"]?.bundlePath == nil)
        let runFolder = base.appendingPathComponent("run-1-\(getpid())")
        // Known by its physical path (/private/var/… on a Mac).
        let runPath = RealPath.of(runFolder.path) ?? runFolder.path
        #expect(bundle.hasPrefix(runPath + "/"), "\(bundle) is not under \(runPath)")
        #expect(FileManager.default.fileExists(atPath: bundle + "/Info.plist"))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: runFolder.path).sorted()
                == ["app-1", "owner.pid"])
        #expect(!FileManager.default.fileExists(atPath: stale.path), "the dead run's folder is removed")
        staging.remove()
        #expect(!FileManager.default.fileExists(atPath: runFolder.path))
    }

    /// A worker of the same run (same deploy id, same state folder, another process) staged its copies
    /// while this process was installing from its own: it removed them, and an install read a half-made
    /// copy ("it has no Info.plist"). Each process now has its own folder; a live one's is left alone.
    @Test func anotherLiveProcessOfTheSameRunKeepsItsFolder() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "staging-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let parent = getppid()
        let theirs = base.appendingPathComponent("given-run-1-\(parent)")
        try FileManager.default.createDirectory(
            at: theirs.appendingPathComponent("1/HADashboard.app"), withIntermediateDirectories: true)
        try Data("\(parent)\n".utf8).write(to: theirs.appendingPathComponent("owner.pid"))
        try Data("plist".utf8).write(to: theirs.appendingPathComponent("1/HADashboard.app/Info.plist"))

        let mine = try ArtifactStaging.makeRunFolder(
            under: base, runID: "given-run-1", in: TestHost.fileSystem)
        #expect(mine != theirs)
        #expect(
            FileManager.default.fileExists(
                atPath: theirs.appendingPathComponent("1/HADashboard.app/Info.plist").path))
        #expect(
            (try FileManager.default.contentsOfDirectory(atPath: base.path)).sorted()
                == ["given-run-1-\(getpid())", "given-run-1-\(parent)"].sorted())
    }

    @Test func anAppDirectoryIsSentAsItIs() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "staging-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let flavour = Flavour(
            name: "legacy", xcode: nil, archs: [.armv7], deploymentTarget: "9.0", sdk: "iphoneos",
            configuration: "Release", scheme: nil, settings: [:],
            location: .init(file: "devices.yaml", line: 1))
        let app = try DemoAppBuilder().build(
            flavour: flavour, marketingVersion: "1", buildNumber: 1, into: root, now: Date(),
            in: TestHost.fileSystem)
        let staging = try ArtifactStaging.prepare(
            ["legacy": app], needingBundles: ["legacy"], under: root.appendingPathComponent("artifacts"),
            runID: "r", in: TestHost.fileSystem)
        #expect(staging.folder == nil)
        #expect(staging.artifacts["legacy"]?.bundlePath == nil)
    }
}
