import Foundation
import Testing
import VirtualDevice

/// Upload throughput of `ideviceinstaller -i` into a virtual device. Runs only with
/// VDEV_BENCH_MB=<size> (scripts/bench-virtual-install.sh); prints `BENCH` lines.
@Test(.enabled(if: ProcessInfo.processInfo.environment["VDEV_BENCH_MB"] != nil))
func installThroughputBenchmark() async throws {
    let megabytes = Int(ProcessInfo.processInfo.environment["VDEV_BENCH_MB"] ?? "200") ?? 200
    let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
    defer { Task { await emulator.stop() } }
    let udid = await emulator.udid("mini4")
    let work = emulator.directory.appendingPathComponent("build")
    let app = try TestBundles.makeApp(
        in: work, bundleID: "io.hadeploy.bench", payloadBytes: megabytes * 1_000_000)
    let ipa = try TestBundles.makeIPA(from: app, in: work, name: "Bench")
    let size = try FileManager.default.attributesOfItem(atPath: ipa.path)[.size] as? Int ?? 0
    print("BENCH ipa: \(size) bytes (stored zip of \(megabytes) MB random data)")

    for (label, rate) in [("unthrottled", nil), ("throttled to USB 2.0 (35 MB/s)", 35_000_000)]
        as [(String, Int?)]
    {
        if let rate {
            try await emulator.daemon.inject(.throttle(bytesPerSecond: rate), udid: udid)
        } else {
            try await emulator.daemon.clearFaults(udid: udid)
        }
        let result = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", ipa.path], timeout: 600)
        #expect(result.status == 0 && result.stdout.contains("Install: Complete"), "\(result)")
        try await Task.sleep(for: .milliseconds(300))
        let upload = try await emulator.daemon.lastUpload(udid: udid)
        let total = Double(size) / 1_000_000 / result.seconds
        func fixed(_ value: Double) -> String { String(format: "%.1f", value) }
        let uploadMB = Double(upload?.bytes ?? 0) / 1_000_000
        print(
            "BENCH \(label): upload \(fixed(uploadMB)) MB in \(fixed(upload?.seconds ?? 0)) s = "
                + "\(fixed(upload?.megabytesPerSecond ?? 0)) MB/s; whole ideviceinstaller -i "
                + "\(fixed(result.seconds)) s = \(fixed(total)) MB/s")
    }
}
