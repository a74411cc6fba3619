import Foundation
import ZIPFoundation

/// A synthetic app for install benchmarks: Info.plist, an executable that is only a Mach-O header
/// (enough for the device's architecture check; it contains no code) and an incompressible payload,
/// zipped stored (`zip -0`) as `Payload/<name>.app` so the upload size is the payload size.
enum BenchApp {
    enum Executable {
        /// One arm64 Mach-O header padded to 4 KiB.
        case arm64
        /// A fat binary with armv7 and arm64 slices.
        case armv7AndArm64
    }

    static func makeIPA(
        at ipa: URL, name: String, bundleID: String, executable: Executable, payloadName: String,
        payloadBytes: Int
    ) throws {
        let work = ipa.deletingLastPathComponent().appendingPathComponent(".bench-app-\(UUID().uuidString)")
        let payload = work.appendingPathComponent("Payload")
        let app = payload.appendingPathComponent("\(name).app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let info: [String: Any] = [
            "CFBundleIdentifier": bundleID, "CFBundleExecutable": name, "CFBundleVersion": "1",
            "CFBundleShortVersionString": "1.0", "CFBundleDisplayName": name, "CFBundleName": name,
            "MinimumOSVersion": "9.0", "UIDeviceFamily": [1, 2],
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: app.appendingPathComponent("Info.plist"))
        let binary =
            switch executable {
            case .arm64: machO(cpuType: arm64CPU, cpuSubtype: 0, is64Bit: true)
            case .armv7AndArm64: fat()
            }
        try binary.write(to: app.appendingPathComponent(name))
        try writeRandomFile(app.appendingPathComponent(payloadName), bytes: payloadBytes)
        try? FileManager.default.removeItem(at: ipa)
        try FileManager.default.zipItem(
            at: payload, to: ipa, shouldKeepParent: true, compressionMethod: .none)
    }

    private static let arm64CPU: UInt32 = 0x0100_000C
    private static let armv7CPU: UInt32 = 12
    private static let armv7Subtype: UInt32 = 9

    /// A thin little-endian Mach-O header (MH_EXECUTE) padded to 4 KiB.
    private static func machO(cpuType: UInt32, cpuSubtype: UInt32, is64Bit: Bool) -> Data {
        var data = Data()
        func le(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        le(is64Bit ? 0xFEED_FACF : 0xFEED_FACE)
        le(cpuType)
        le(cpuSubtype)
        le(2)
        for _ in 0..<(is64Bit ? 4 : 3) { le(0) }
        data.append(Data(count: 4096 - data.count))
        return data
    }

    /// A big-endian fat header, then one 4 KiB thin header per slice.
    private static func fat() -> Data {
        let slices: [(cpu: UInt32, subtype: UInt32, is64Bit: Bool)] = [
            (armv7CPU, armv7Subtype, false), (arm64CPU, 0, true),
        ]
        var data = Data()
        func be(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }
        be(0xCAFE_BABE)
        be(UInt32(slices.count))
        for (index, slice) in slices.enumerated() {
            be(slice.cpu)
            be(slice.subtype)
            be(UInt32(4096 * (index + 1)))
            be(4096)
            be(12)
        }
        data.append(Data(count: 4096 - data.count))
        for slice in slices {
            data.append(machO(cpuType: slice.cpu, cpuSubtype: slice.subtype, is64Bit: slice.is64Bit))
        }
        return data
    }

    /// Random bytes written 1 MiB at a time, so a large payload never sits in memory whole.
    private static func writeRandomFile(_ url: URL, bytes: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var remaining = bytes
        while remaining > 0 {
            let count = min(remaining, 1 << 20)
            var chunk = [UInt8](repeating: 0, count: count)
            chunk.withUnsafeMutableBytes { raw in
                for index in stride(from: 0, to: count, by: 8) {
                    let value = generator.next()
                    withUnsafeBytes(of: value) { word in
                        for offset in 0..<min(8, count - index) { raw[index + offset] = word[offset] }
                    }
                }
            }
            try handle.write(contentsOf: chunk)
            remaining -= count
        }
    }
}
