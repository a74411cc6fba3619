import DeviceSpec
import Foundation
import HADeployBuild
import ZIPFoundation

/// A synthetic app for install benchmarks: Info.plist, an executable that is only a signed Mach-O
/// header (enough for the device's checks; it contains no code), a profile and an incompressible payload,
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
        // Signed (a code signature load command) and with an in-house profile that covers every
        // twin: the twins refuse an app without either, as real devices do.
        let archs: [Arch] =
            switch executable {
            case .arm64: [.arm64]
            case .armv7AndArm64: [.armv7, .arm64]
            }
        try MachOWriter.executable(
            archs: archs, entitlements: DemoAppBuilder.entitlements(bundleID: bundleID)
        )
        .write(to: app.appendingPathComponent(name))
        try DemoAppBuilder.developmentProfile(bundleID: "*", devices: nil, now: Date())
            .write(to: app.appendingPathComponent("embedded.mobileprovision"))
        try writeRandomFile(app.appendingPathComponent(payloadName), bytes: payloadBytes)
        try? FileManager.default.removeItem(at: ipa)
        try FileManager.default.zipItem(
            at: payload, to: ipa, shouldKeepParent: true, compressionMethod: .none)
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
