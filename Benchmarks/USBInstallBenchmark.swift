import ArgumentParser
import Foundation
import HADeployCore
import MobileDevice

/// `hadeploy-bench usb-install`: `ideviceinstaller -i` against `USBDevice.install(artifact:)` on
/// one device behind a usbmuxd (e.g. `hadeploy virtual` in its own process), alternating over
/// rounds because a shared machine makes single runs noisy. `--install-only` runs our install
/// once, for `/usr/bin/time -v` (peak RSS of the uploader). Prints `BENCH` lines (BENCHMARKS.md §2).
struct USBInstallBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usb-install",
        abstract: "hadeploy install vs ideviceinstaller -i on one device, side by side.")

    @Option(help: "usbmuxd address, UNIX:/path or host:port (env HADEPLOY_USB_BENCH_SOCKET).")
    var socket: String?

    @Option(help: "The device's UDID (env HADEPLOY_USB_BENCH_UDID).")
    var udid: String?

    @Option(help: "The .ipa to install, prepared beforehand (env HADEPLOY_USB_BENCH_IPA).")
    var ipa: String?

    @Option(
        help:
            "Install records directory (env HADEPLOY_USB_BENCH_STATE, default /tmp/hadeploy-usb-bench-state)."
    )
    var state: String?

    @Option(help: "Rounds of the side-by-side comparison (env HADEPLOY_USB_BENCH_ROUNDS, default 3).")
    var rounds: Int?

    @Flag(help: "Reach the device through usbmuxd's network lookup (Wi-Fi; the tool runs with -n).")
    var network = false

    @Flag(help: "Only our install, once, forced (for /usr/bin/time -v).")
    var installOnly = false

    @Flag(help: "Show MobileDevice's log on stderr.")
    var verbose = false

    func run() async throws {
        let socket = try BenchEnvironment.required(socket, "HADEPLOY_USB_BENCH_SOCKET", option: "--socket")
        let udid = try BenchEnvironment.required(udid, "HADEPLOY_USB_BENCH_UDID", option: "--udid")
        let ipa = URL(
            fileURLWithPath: try BenchEnvironment.required(ipa, "HADEPLOY_USB_BENCH_IPA", option: "--ipa"))
        let state = URL(
            fileURLWithPath: BenchEnvironment.value(state, "HADEPLOY_USB_BENCH_STATE")
                ?? "/tmp/hadeploy-usb-bench-state")
        try USBTransport.route(to: socket, folders: [NSTemporaryDirectory()])
        var options = USBDeviceOptions(
            fileSystem: HADeployContext.live().fileSystem, clock: HADeployContext.live().clock,
            stateDirectory: state,
            logger: BenchLogger.make("hadeploy-bench.usb", verbose: verbose))
        options.network = network
        let device = try await USBTransport.connect(
            udid: udid, deadline: .now + .seconds(30), options: options)
        if installOnly {
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = try await device.install(artifact: ipa, force: true)
            guard outcome == .installed else { throw BenchFailure("a forced install reported \(outcome)") }
            print("BENCH install-only \(ipa.lastPathComponent) \(seconds(clock.now - start)) s")
        } else {
            let rounds = try BenchEnvironment.integer(rounds, "HADEPLOY_USB_BENCH_ROUNDS", default: 3)
            guard rounds > 0 else { throw BenchFailure("--rounds must be at least 1") }
            try await sideBySide(device: device, udid: udid, socket: socket, ipa: ipa, rounds: rounds)
        }
    }

    private func sideBySide(device: USBDevice, udid: String, socket: String, ipa: URL, rounds: Int)
        async throws
    {
        let app = try AppArtifact.inspect(ipa, in: HADeployContext.live().fileSystem)
        let clock = ContinuousClock()
        var tool: [Duration] = []
        var ours: [Duration] = []
        var unchanged: [Duration] = []
        var toolFailures: [String] = []
        for round in 1...rounds {
            _ = try await device.uninstall(bundleID: app.bundleIdentifier)
            let toolStart = clock.now
            let result = try await ToolProcess.run(
                "ideviceinstaller", (network ? ["-n"] : []) + ["-u", udid, "-i", ipa.path], socket: socket,
                timeout: .seconds(900))
            if result.status == 0, !result.timedOut, result.output.contains("Install: Complete") {
                tool.append(clock.now - toolStart)
            } else if network {
                // Debian's 1.3.0 tools cannot upload over the network lookup (non-blocking sockets):
                // that is a result to record, not a broken benchmark.
                let said = result.output.split(separator: "\n").first { $0.contains("error") } ?? "no output"
                toolFailures.append("round \(round): \(said)")
            } else {
                throw BenchFailure(
                    "round \(round): ideviceinstaller -i failed (exit \(result.status)"
                        + "\(result.timedOut ? ", killed after 900 s" : "")):\n\(result.output)")
            }

            _ = try await device.uninstall(bundleID: app.bundleIdentifier)
            let oursStart = clock.now
            let installed = try await device.install(artifact: ipa)
            ours.append(clock.now - oursStart)
            guard installed == .installed else {
                throw BenchFailure("round \(round): the install after an uninstall reported \(installed)")
            }

            let skipStart = clock.now
            let again = try await device.install(artifact: ipa)
            unchanged.append(clock.now - skipStart)
            guard again == .skippedUnchanged else {
                throw BenchFailure("round \(round): the unchanged redeploy reported \(again), not a skip")
            }
        }
        func list(_ values: [Duration]) -> String {
            values.isEmpty ? "-" : values.map(seconds).joined(separator: " ")
        }
        func median(_ values: [Duration]) -> String {
            values.isEmpty ? "-" : seconds(values.sorted()[values.count / 2])
        }
        let megabytes = Double(app.uploadSize) / 1_048_576
        print(
            "BENCH ipa=\(Timing.fixed(megabytes, digits: 0)) MiB rounds=\(rounds)"
                + (network ? " over the network lookup (-n)" : "") + "\n"
                + "BENCH ideviceinstaller -i: \(list(tool)) s (median \(median(tool)))"
                + (toolFailures.isEmpty ? "" : "; failed: " + toolFailures.joined(separator: "; ")) + "\n"
                + "BENCH hadeploy install:    \(list(ours)) s (median \(median(ours)))\n"
                + "BENCH unchanged redeploy:  \(list(unchanged)) s (median \(median(unchanged)))")
        if let slow = unchanged.first(where: { $0 >= .seconds(1) }) {
            throw BenchFailure("an unchanged redeploy took \(seconds(slow)) s (target < 1 s)")
        }
    }

    private func seconds(_ duration: Duration) -> String {
        Timing.fixed(Timing.seconds(duration), digits: 2)
    }
}
