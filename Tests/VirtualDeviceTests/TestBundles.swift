import Foundation
import TestSupport
import ZIPFoundation

/// Builds test app bundles. The executables are SYNTHETIC: only a Mach-O (or fat) header with the
/// requested CPU slices, enough for the emulator's architecture check; they contain no code.
enum TestBundles {
    enum Slice {
        case armv7
        case arm64

        var cpuType: UInt32 { self == .armv7 ? 12 : 0x0100_000C }
        var cpuSubtype: UInt32 { self == .armv7 ? 9 : 0 }
        var is64Bit: Bool { self == .arm64 }
    }

    /// A thin Mach-O header (little-endian) padded to `size` bytes; `signed`: with a code signature
    /// load command (`LC_CODE_SIGNATURE`, its blob empty), as installd requires.
    static func machO(_ slice: Slice, size: Int = 4096, signed: Bool = true) -> Data {
        var data = Data()
        func le(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        le(slice.is64Bit ? 0xFEED_FACF : 0xFEED_FACE)
        le(slice.cpuType)
        le(slice.cpuSubtype)
        le(2)  // MH_EXECUTE
        le(signed ? 1 : 0)  // ncmds
        le(signed ? 16 : 0)  // sizeofcmds
        le(0)
        if slice.is64Bit { le(0) }
        if signed {
            le(0x1D)  // LC_CODE_SIGNATURE
            le(16)
            le(UInt32(max(size, 256) - 64))  // dataoff
            le(0)  // datasize
        }
        data.append(Data(count: max(0, size - data.count)))
        return data
    }

    /// A fat (universal) binary with one thin header per slice.
    static func fat(_ slices: [Slice]) -> Data {
        var data = Data()
        func be(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }
        be(0xCAFE_BABE)
        be(UInt32(slices.count))
        for (index, slice) in slices.enumerated() {
            be(slice.cpuType)
            be(slice.cpuSubtype)
            be(UInt32(4096 * (index + 1)))
            be(4096)
            be(12)
        }
        data.append(Data(count: 4096 - data.count))
        for slice in slices { data.append(machO(slice)) }
        return data
    }

    /// Writes `<directory>/<name>.app` with Info.plist and the executable; returns its URL.
    @discardableResult
    static func makeApp(
        in directory: URL, name: String = "Dashboard", bundleID: String, version: String = "42",
        shortVersion: String = "1.2.3", executable: Data? = nil, infoPlist: Bool = true,
        executableKey: Bool = true, payloadBytes: Int = 0, profile: Data? = TestProfiles.anyDevice
    ) throws -> URL {
        let app = directory.appendingPathComponent("\(name).app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        if infoPlist {
            var info: [String: Any] = [
                "CFBundleIdentifier": bundleID, "CFBundleExecutable": name, "CFBundleVersion": version,
                "CFBundleShortVersionString": shortVersion, "CFBundleDisplayName": "HA \(name)",
                "CFBundleName": name, "MinimumOSVersion": "9.0", "UIDeviceFamily": [1, 2],
            ]
            if !executableKey { info["CFBundleExecutable"] = nil }
            try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
                .write(to: app.appendingPathComponent("Info.plist"))
        }
        try (executable ?? fat([.armv7, .arm64])).write(to: app.appendingPathComponent(name))
        if payloadBytes > 0 {
            try writeRandomFile(app.appendingPathComponent("Assets.bin"), bytes: payloadBytes)
        }
        try profile?.write(to: app.appendingPathComponent("embedded.mobileprovision"))
        return app
    }

    /// Incompressible filler so uploads have a realistic size.
    static func writeRandomFile(_ url: URL, bytes: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var remaining = bytes
        while remaining > 0 {
            let count = min(remaining, 1 << 20)
            var chunk = [UInt8](repeating: 0, count: count)
            for index in stride(from: 0, to: count, by: 8) {
                let value = generator.next()
                withUnsafeBytes(of: value) { raw in
                    for offset in 0..<min(8, count - index) { chunk[index + offset] = raw[offset] }
                }
            }
            try handle.write(contentsOf: chunk)
            remaining -= count
        }
    }

    /// Zips an `.app` as `Payload/X.app` into `<directory>/<name>.ipa` (stored, like Xcode's exports
    /// of already-compressed assets).
    static func makeIPA(from app: URL, in directory: URL, name: String) throws -> URL {
        let root = directory.appendingPathComponent("ipa-root-\(UUID().uuidString)")
        let payload = root.appendingPathComponent("Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: app, to: payload.appendingPathComponent(app.lastPathComponent))
        let ipa = directory.appendingPathComponent("\(name).ipa")
        try? FileManager.default.removeItem(at: ipa)
        try FileManager.default.zipItem(
            at: payload, to: ipa, shouldKeepParent: true, compressionMethod: .none)
        try FileManager.default.removeItem(at: root)
        return ipa
    }
}
