import ArgumentParser
import Foundation
import HADeployCore
import VirtualDevice

/// `hadeploy-bench virtual-install`: upload throughput of the real `ideviceinstaller -i` into a
/// virtual iPad mini 4 running in this process, unthrottled and throttled to USB 2.0 speed.
/// Prints `BENCH` lines (scripts/bench-virtual-install.sh).
struct VirtualInstallBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "virtual-install",
        abstract: "ideviceinstaller -i upload throughput into a virtual device.")

    @Option(help: "App payload in MB of random data (env VDEV_BENCH_MB, default 200).")
    var megabytes: Int?

    @Flag(help: "Show the emulator's log on stderr.")
    var verbose = false

    func run() async throws {
        let megabytes = try BenchEnvironment.integer(megabytes, "VDEV_BENCH_MB", default: 200)
        guard megabytes > 0 else { throw BenchFailure("the size must be at least 1 MB") }
        // Short path: UNIX socket paths are limited to 108 bytes.
        let directory = URL(fileURLWithPath: "/tmp/vdb-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard var profile = VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: nil) else {
            throw BenchFailure("VirtualDevice has no iPad5,1 preset")
        }
        profile.name = "mini4"
        let daemon = try VirtualUsbmuxd(
            profiles: [profile], stateDirectory: directory,
            address: .unixSocket(directory.appendingPathComponent("usbmuxd.sock").path),
            logger: BenchLogger.make("hadeploy-bench.virtual", verbose: verbose),
            fileSystem: HADeployContext.live().fileSystem)
        do {
            let socket = try await daemon.start()
            try await measure(daemon: daemon, socket: socket, directory: directory, megabytes: megabytes)
        } catch {
            await daemon.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        await daemon.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func measure(daemon: VirtualUsbmuxd, socket: String, directory: URL, megabytes: Int) async throws
    {
        guard let udid = await daemon.devices().first(where: { $0.name == "mini4" })?.udid else {
            throw BenchFailure("the virtual usbmuxd does not list mini4")
        }
        let ipa = directory.appendingPathComponent("Bench.ipa")
        try BenchApp.makeIPA(
            at: ipa, name: "Dashboard", bundleID: "io.hadeploy.bench", executable: .armv7AndArm64,
            payloadName: "Assets.bin", payloadBytes: megabytes * 1_000_000)
        let size = try FileManager.default.attributesOfItem(atPath: ipa.path)[.size] as? Int ?? 0
        print("BENCH ipa: \(size) bytes (stored zip of \(megabytes) MB random data)")

        for (label, rate) in [("unthrottled", nil), ("throttled to USB 2.0 (35 MB/s)", 35_000_000)]
            as [(String, Int?)]
        {
            if let rate {
                try await daemon.inject(.throttle(bytesPerSecond: rate), udid: udid)
            } else {
                try await daemon.clearFaults(udid: udid)
            }
            let result = try await ToolProcess.run(
                "ideviceinstaller", ["-u", udid, "-i", ipa.path], socket: socket, timeout: .seconds(600))
            guard result.status == 0, !result.timedOut, result.output.contains("Install: Complete") else {
                throw BenchFailure(
                    "ideviceinstaller -i failed (\(label), exit \(result.status)"
                        + "\(result.timedOut ? ", killed after 600 s" : "")):\n\(result.output)")
            }
            // The emulator records the upload when the AFC connection ends, in a task of its own.
            try await Task.sleep(for: .milliseconds(300))
            let upload = try await daemon.lastUpload(udid: udid)
            let total = Double(size) / 1_000_000 / result.seconds
            let uploadMB = Double(upload?.bytes ?? 0) / 1_000_000
            print(
                "BENCH \(label): upload \(Timing.fixed(uploadMB)) MB in \(Timing.fixed(upload?.seconds ?? 0)) s = "
                    + "\(Timing.fixed(upload?.megabytesPerSecond ?? 0)) MB/s; whole ideviceinstaller -i "
                    + "\(Timing.fixed(result.seconds)) s = \(Timing.fixed(total)) MB/s")
        }
    }
}
