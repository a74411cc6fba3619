import DeviceSpec
import Foundation
import HADeployCore
import TestSupport
import Testing
import ZIPFoundation

@testable import HADeployBuild
@testable import HADeployDrivers
@testable import HADeployKit

struct ArtifactTests {
    func flavour(_ name: String, _ archs: [Arch], sdk: String = "iphoneos") -> Flavour {
        Flavour(
            name: name, xcode: nil, archs: archs, deploymentTarget: "9.0", sdk: sdk, configuration: "Release",
            scheme: nil, settings: [:], location: .init(file: "devices.yaml", line: 1))
    }

    @Test(arguments: [[Arch.armv7, .arm64], [.arm64], [.x86_64]])
    func demoBundlesCarryExactlyTheFlavoursSlices(archs: [Arch]) throws {
        let root = try temporaryDirectory()
        let built = try DemoAppBuilder().build(
            flavour: flavour("f", archs), marketingVersion: "1.4.0", buildNumber: 42, into: root,
            now: Date(), in: TestHost.fileSystem)
        let inspected = try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(
            URL(fileURLWithPath: built.path), flavour: "f")
        #expect(inspected.archs == archs.map(\.rawValue))
        #expect(inspected.bundleID == "com.example.hadashboard")
        #expect(inspected.marketingVersion == "1.4.0")
        #expect(inspected.buildNumber == "42")
    }

    @Test func anIpaIsReadFromItsPayload() throws {
        let root = try temporaryDirectory()
        let built = try DemoAppBuilder().build(
            flavour: flavour("legacy", [.armv7, .arm64]), marketingVersion: "2.0", buildNumber: 3, into: root,
            now: Date(), in: TestHost.fileSystem)
        let payload = root.appendingPathComponent("ipa/Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: built.path), to: payload.appendingPathComponent("HADashboard.app"))
        let ipa = root.appendingPathComponent("HADashboard.ipa")
        try FileManager.default.zipItem(at: payload, to: ipa, shouldKeepParent: true)
        let inspected = try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(ipa, flavour: "legacy")
        #expect(inspected.archs == ["armv7", "arm64"])
        #expect(inspected.marketingVersion == "2.0")
    }

    /// The process's peak resident memory so far, in bytes.
    static func peakMemory() -> Int {
        TestPlatform.peakResidentBytes()
    }

    /// A zip bomb shaped like an app: an .ipa of ~1 MB whose Info.plist inflates to `size` bytes.
    static func hostileIPA(at url: URL, infoPlistSize: Int64) throws {
        let archive = try Archive(url: url, accessMode: .create)
        let chunk = Data(count: 1 << 20)
        try archive.addEntry(
            with: "Payload/Bomb.app/Info.plist", type: .file, uncompressedSize: infoPlistSize,
            compressionMethod: .deflate, bufferSize: 1 << 20,
            provider: { (position: Int64, size: Int) in chunk.prefix(min(size, Int(infoPlistSize - position)))
            })
        try archive.addEntry(
            with: "Payload/Bomb.app/Bomb", type: .file, uncompressedSize: Int64(4), compressionMethod: .none,
            provider: { (_: Int64, _: Int) in Data([0xCE, 0xFA, 0xED, 0xFE]) })
    }

    @Test func anInfoPlistInflatingToAGigabyteIsRefusedWithoutReadingIt() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let ipa = root.appendingPathComponent("bomb.ipa")
        try Self.hostileIPA(at: ipa, infoPlistSize: 1 << 30)
        let archiveSize = try FileManager.default.attributesOfItem(atPath: ipa.path)[.size] as? Int ?? 0
        #expect(archiveSize < 4 << 20)
        let before = Self.peakMemory()
        #expect {
            try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(ipa, flavour: "modern")
        } throws: { error in
            "\(error)".contains("Payload/Bomb.app/Info.plist inflates to more than 4 MB")
        }
        // Reading the whole entry would have taken a gigabyte; the cap keeps it to a few megabytes.
        let grown = Self.peakMemory() - before
        #expect(grown < 64 << 20, "peak memory grew by \(grown / 1_048_576) MB")
    }

    @Test func notAZipIsAClearError() throws {
        let root = try temporaryDirectory()
        let bogus = root.appendingPathComponent("broken.ipa")
        try Data("this is not a zip".utf8).write(to: bogus)
        #expect {
            try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(bogus, flavour: "modern")
        } throws: { error in
            "\(error)".contains("broken.ipa: it is not a zip archive")
        }
    }
}
