import Foundation
import TestSupport
import Testing

@testable import MobileDevice

@Suite struct AppArtifactTests {
    @Test func readsAnAppDirectory() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.slices = ["armv7", "arm64"]
        let app = try AppArtifact.inspect(try TestApps.makeApp(spec, in: directory))
        #expect(app.kind == .appDirectory)
        #expect(app.bundleIdentifier == "io.hadeploy.test.demo")
        #expect(app.shortVersion == "1.0")
        #expect(app.bundleVersion == "1")
        #expect(app.executable == "Demo")
        #expect(app.architectures == ["armv7", "arm64"])
        #expect(app.contentHash.count == 64)
    }

    /// Before: an Info.plist with `<integer>` for CFBundleVersion was reported "has no CFBundleVersion".
    @Test func aNumericBuildNumberIsNamedAsANumberNotAsMissing() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        let plistURL = app.appendingPathComponent("Info.plist")
        var info = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: plistURL), format: nil)
                as? [String: Any])
        info["CFBundleVersion"] = 57
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0).write(
            to: plistURL)
        let error = #expect(throws: MobileDeviceError.self) { try AppArtifact.inspect(app) }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("CFBundleVersion is the number 57, not a string"), "\(text)")
        #expect(!text.contains("has no CFBundleVersion"), "\(text)")
    }

    /// A Mac Catalyst build as Xcode writes it into `Debug-maccatalyst/`: a macOS bundle, with the
    /// same name checks as an iOS one.
    @Test func readsAMacCatalystBundleAndChecksItsNames() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        func macApp(bundleID: String = "com.hadashboard.app", executable: String = "HA Dashboard") throws
            -> URL
        {
            let app = directory.appendingPathComponent("HA Dashboard.app")
            try? FileManager.default.removeItem(at: app)
            let contents = app.appendingPathComponent("Contents")
            try FileManager.default.createDirectory(
                at: contents.appendingPathComponent("MacOS"), withIntermediateDirectories: true)
            let info: [String: Any] = [
                "CFBundleIdentifier": bundleID, "CFBundleExecutable": executable,
                "CFBundleShortVersionString": "1.2.5", "CFBundleVersion": "158",
                "CFBundleSupportedPlatforms": ["MacOSX"], "LSMinimumSystemVersion": "11.0",
            ]
            try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
                .write(to: contents.appendingPathComponent("Info.plist"))
            try TestApps.machO(["arm64"]).write(to: contents.appendingPathComponent("MacOS/HA Dashboard"))
            try Data("APPL????".utf8).write(to: contents.appendingPathComponent("PkgInfo"))
            return app
        }
        let mac = try AppArtifact.inspect(try macApp())
        #expect(mac.platform == .macCatalyst)
        #expect(mac.kind == .appDirectory)
        #expect(mac.bundleIdentifier == "com.hadashboard.app")
        #expect(mac.executable == "HA Dashboard")
        #expect(mac.bundleVersion == "158")
        #expect(mac.architectures == ["arm64"])

        let ios = try AppArtifact.inspect(try TestApps.makeApp(TestApps.Spec(), in: directory))
        #expect(ios.platform == .iOS)

        for (bundleID, executable, problem) in [
            ("../DCIM", "HA Dashboard", "may only contain letters"),
            ("com.hadashboard.app", "../../bin/sh", "CFBundleExecutable"),
            ("com.hadashboard.app", "Other", "Contents/MacOS/Other is missing"),
        ] {
            let error = #expect(throws: MobileDeviceError.self) {
                try AppArtifact.inspect(try macApp(bundleID: bundleID, executable: executable))
            }
            #expect(error?.reason.contains(problem) == true, "\(error?.reason ?? "")")
        }
    }

    @Test func readsAnIPAWithoutUnpackingIt() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = try AppArtifact.inspect(try TestApps.makeIPA(TestApps.Spec(), in: directory))
        #expect(ipa.kind == .ipa)
        #expect(ipa.bundleIdentifier == "io.hadeploy.test.demo")
        #expect(ipa.architectures == ["arm64"])
        let size = try FileManager.default.attributesOfItem(atPath: ipa.url.path)[.size] as? NSNumber
        #expect(ipa.uploadSize == size?.intValue)
    }

    @Test func contentHashFollowsContentNotVersion() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try AppArtifact.inspect(try TestApps.makeApp(TestApps.Spec(), in: directory))
        let same = try AppArtifact.inspect(try TestApps.makeApp(TestApps.Spec(), in: directory))
        var changed = TestApps.Spec()
        changed.salt = "rebuilt"
        let other = try AppArtifact.inspect(try TestApps.makeApp(changed, in: directory))
        #expect(first.contentHash == same.contentHash)
        #expect(first.contentHash != other.contentHash)
    }

    @Test func notAnAppIsRefusedWithThePath() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        let bogus = directory.appendingPathComponent("Broken.app")
        try FileManager.default.createDirectory(at: bogus, withIntermediateDirectories: true)
        let error = #expect(throws: MobileDeviceError.self) { try AppArtifact.inspect(bogus) }
        #expect(error?.kind == .invalidArtifact)
        #expect(error?.description.contains("Broken.app: it has no Info.plist") == true)
    }

    @Test func scriptExecutableIsNotMachO() throws {
        let directory = try temporaryDirectory("artifact")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        try Data("#!/bin/sh\n".utf8).write(to: app.appendingPathComponent("Demo"))
        let error = #expect(throws: MobileDeviceError.self) { try AppArtifact.inspect(app) }
        #expect(error?.description.contains("is not a Mach-O binary") == true)
    }
}
