import Foundation
import Testing

@testable import MobileDevice

/// Side-by-side install timings on one device (BENCHMARK-NOTES.md). Not part of `make test`:
/// enabled by HADEPLOY_USB_BENCH_SOCKET (a usbmuxd, e.g. `hadeploy virtual`), with
/// HADEPLOY_USB_BENCH_UDID and HADEPLOY_USB_BENCH_IPA (prepared outside the measured process).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["HADEPLOY_USB_BENCH_SOCKET"] != nil))
struct BenchmarkTests {
    struct Setup {
        let socket: String
        let udid: String
        let ipa: URL
        let state: URL
    }

    private func setup() throws -> Setup {
        let environment = ProcessInfo.processInfo.environment
        let socket = try #require(environment["HADEPLOY_USB_BENCH_SOCKET"])
        let udid = try #require(environment["HADEPLOY_USB_BENCH_UDID"])
        let ipa = URL(fileURLWithPath: try #require(environment["HADEPLOY_USB_BENCH_IPA"]))
        USBTransport.setUsbmuxdAddress(socket)
        return Setup(
            socket: socket, udid: udid, ipa: ipa,
            state: URL(
                fileURLWithPath: environment["HADEPLOY_USB_BENCH_STATE"] ?? "/tmp/hadeploy-usb-bench-state"))
    }

    private func connect(_ setup: Setup) async throws -> USBDevice {
        try await USBTransport.connect(
            udid: setup.udid, deadline: .now + .seconds(30),
            options: USBDeviceOptions(stateDirectory: setup.state, logger: SharedEmulator.quietLogger))
    }

    private func seconds(_ duration: Duration) -> String {
        String(format: "%.2f", Double(duration.milliseconds) / 1000)
    }

    /// Alternating rounds on the same device: the machine is shared, so single runs are noisy.
    @Test func sideBySide() async throws {
        let setup = try setup()
        let app = try AppArtifact.inspect(setup.ipa)
        let device = try await connect(setup)
        let clock = ContinuousClock()
        let rounds = Int(ProcessInfo.processInfo.environment["HADEPLOY_USB_BENCH_ROUNDS"] ?? "3") ?? 3
        var tool: [Duration] = []
        var ours: [Duration] = []
        var unchanged: [Duration] = []
        for _ in 0..<rounds {
            _ = try await device.uninstall(bundleID: app.bundleIdentifier)
            let toolStart = clock.now
            let result = try await DebianTool.run(
                "ideviceinstaller", ["-u", setup.udid, "-i", setup.ipa.path], socket: setup.socket,
                timeout: 900)
            tool.append(clock.now - toolStart)
            #expect(result.status == 0 && result.output.contains("Install: Complete"), "\(result.output)")

            _ = try await device.uninstall(bundleID: app.bundleIdentifier)
            let oursStart = clock.now
            #expect(try await device.install(artifact: setup.ipa) == .installed)
            ours.append(clock.now - oursStart)

            let skipStart = clock.now
            #expect(try await device.install(artifact: setup.ipa) == .skippedUnchanged)
            unchanged.append(clock.now - skipStart)
        }
        #expect(unchanged.allSatisfy { $0 < .seconds(1) })
        func list(_ values: [Duration]) -> String { values.map(seconds).joined(separator: " ") }
        func median(_ values: [Duration]) -> String { seconds(values.sorted()[values.count / 2]) }
        let megabytes = Double(app.uploadSize) / 1_048_576
        print(
            "BENCH ipa=\(String(format: "%.0f", megabytes)) MiB rounds=\(rounds)\n"
                + "BENCH ideviceinstaller -i: \(list(tool)) s (median \(median(tool)))\n"
                + "BENCH hadeploy install:    \(list(ours)) s (median \(median(ours)))\n"
                + "BENCH unchanged redeploy:  \(list(unchanged)) s (median \(median(unchanged)))")
    }

    /// Only our install, for `/usr/bin/time -v` on the test binary (peak RSS of the uploader).
    @Test func installOnly() async throws {
        let setup = try setup()
        let device = try await connect(setup)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await device.install(artifact: setup.ipa, force: true) == .installed)
        print("BENCH install-only \(setup.ipa.lastPathComponent) \(seconds(clock.now - start)) s")
    }
}
