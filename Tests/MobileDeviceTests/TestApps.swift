import Foundation
import TestSupport
import ZIPFoundation

/// Builds small (or large) fake iOS apps that look real to installd: an Info.plist, a main
/// executable starting with a Mach-O header for the requested slices, and optional payload.
enum TestApps {
    struct Spec {
        var bundleID = "io.hadeploy.test.demo"
        var name = "Demo"
        var shortVersion = "1.0"
        var bundleVersion = "1"
        var slices: [String] = ["arm64"]
        /// Extra bytes of incompressible payload (a resource file), for upload-size tests.
        var payloadBytes = 0
        /// Changes the content without changing the versions.
        var salt = ""
        /// `embedded.mobileprovision`: the tests' in-house profile unless set (nil: none, which a twin
        /// refuses as a real device does).
        var profile: Data? = TestProfiles.anyDevice
    }

    /// Writes `<directory>/<name>.app`.
    static func makeApp(_ spec: Spec, in directory: URL) throws -> URL {
        let app = directory.appendingPathComponent("\(spec.name).app")
        try? FileManager.default.removeItem(at: app)
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let info: [String: Any] = [
            "CFBundleIdentifier": spec.bundleID, "CFBundleExecutable": spec.name, "CFBundleName": spec.name,
            "CFBundleDisplayName": spec.name, "CFBundleShortVersionString": spec.shortVersion,
            "CFBundleVersion": spec.bundleVersion, "CFBundlePackageType": "APPL", "MinimumOSVersion": "9.0",
            "UIDeviceFamily": [1, 2],
        ]
        let plist = try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
        try plist.write(to: app.appendingPathComponent("Info.plist"))
        try (machO(spec.slices) + Data("salt:\(spec.salt)".utf8)).write(
            to: app.appendingPathComponent(spec.name))
        try Data("APPL????".utf8).write(to: app.appendingPathComponent("PkgInfo"))
        try FileManager.default.createDirectory(
            at: app.appendingPathComponent("Base.lproj"), withIntermediateDirectories: true)
        try Data("\"hello\" = \"Hello\";".utf8).write(
            to: app.appendingPathComponent("Base.lproj/Main.strings"))
        if spec.payloadBytes > 0 {
            try writeRandom(bytes: spec.payloadBytes, to: app.appendingPathComponent("payload.bin"))
        }
        if let profile = spec.profile {
            try profile.write(to: app.appendingPathComponent("embedded.mobileprovision"))
        }
        return app
    }

    /// Writes `<directory>/<name>.ipa` (Payload/<name>.app stored, not compressed: a large random
    /// payload would not shrink anyway).
    static func makeIPA(_ spec: Spec, in directory: URL) throws -> URL {
        let staging = try temporaryDirectory("ipa-staging")
        defer { try? FileManager.default.removeItem(at: staging) }
        let payload = staging.appendingPathComponent("Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        _ = try makeApp(spec, in: payload)
        let ipa = directory.appendingPathComponent("\(spec.name).ipa")
        try? FileManager.default.removeItem(at: ipa)
        try FileManager.default.zipItem(
            at: payload, to: ipa, shouldKeepParent: true,
            compressionMethod: spec.payloadBytes > 0 ? .none : .deflate)
        return ipa
    }

    /// A Mach-O header: thin for one slice, fat for several, padded like a real binary.
    static func machO(_ slices: [String]) -> Data {
        func cpu(_ slice: String) -> (UInt32, UInt32) {
            switch slice {
            case "armv7": return (12, 9)
            case "armv7s": return (12, 11)
            case "arm64e": return (0x0100_000C, 2)
            default: return (0x0100_000C, 0)
            }
        }
        // A signed slice (installd takes no executable without `LC_CODE_SIGNATURE`), 4 KiB.
        func thin(_ slice: String) -> [UInt8] {
            let (type, sub) = cpu(slice)
            let is64 = type != 12
            let le = MachOFixtures.littleEndian
            var bytes =
                le(is64 ? 0xFEED_FACF : 0xFEED_FACE) + le(type) + le(sub) + le(2) + le(1) + le(16) + le(0)
            if is64 { bytes += le(0) }
            bytes += le(0x1D) + le(16) + le(4032) + le(0)
            return bytes + [UInt8](repeating: 0, count: 4096 - bytes.count)
        }
        guard slices.count > 1 else { return Data(thin(slices[0])) }
        var bytes = MachOFixtures.fat(slices.map(cpu))
        bytes += [UInt8](repeating: 0, count: 4096 - bytes.count)
        for slice in slices { bytes += thin(slice) }
        return Data(bytes)
    }

    private static func writeRandom(bytes: Int, to url: URL) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var remaining = bytes
        var chunk = [UInt64](repeating: 0, count: 1 << 17)  // 1 MiB
        while remaining > 0 {
            for index in chunk.indices { chunk[index] = generator.next() }
            let count = min(remaining, chunk.count * 8)
            chunk.withUnsafeBytes { handle.write(Data($0.prefix(count))) }
            remaining -= count
        }
    }
}
