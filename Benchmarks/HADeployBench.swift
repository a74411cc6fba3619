import ArgumentParser
import Foundation

/// Opt-in measurements, kept out of the test targets so `swift test` runs only checks (a test that
/// needs a peer fails, it never skips). Driven by `scripts/bench-ha.py`,
/// `scripts/bench-virtual-install.sh` and the USB commands in BENCHMARKS.md.
@main
struct HADeployBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hadeploy-bench",
        abstract: "hadeploy's benchmarks (see BENCHMARKS.md for the recorded figures).",
        subcommands: [
            HomeAssistantBenchmark.self, USBInstallBenchmark.self, VirtualInstallBenchmark.self,
            MakeIPACommand.self, JailbreakRedeployBenchmark.self, ScreenshotCompareBenchmark.self,
        ])
}
