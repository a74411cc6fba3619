import ArgumentParser
import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers
import SSHTransport

/// `hadeploy-bench jailbreak-redeploy`: one deploy of an `.app` to a jailbroken device (or its twin)
/// with `JailbreakDeployer`, as `hadeploy deploy` does it (backup, changed files only, ldid, swap,
/// killall, uicache, preferences, open). Driven by scripts/bench-jailbreak.sh, which times the old
/// script's way next to it. Prints a `BENCH` line (BENCHMARKS.md).
struct JailbreakRedeployBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jailbreak-redeploy", abstract: "One jailbroken-device deploy, timed.")

    @Option(help: "SSH port on 127.0.0.1 (the throttling proxy in front of the twin).")
    var port: Int

    @Option(help: "Private key for root.")
    var key: String

    @Option(help: "known_hosts holding the device's host key.")
    var knownHosts: String

    @Option(help: "The .app directory to deploy.")
    var app: String

    @Flag(help: "The device only speaks the old algorithms (ssh-rsa, SHA-1 kex, hmac-sha1).")
    var legacy = false

    func run() async throws {
        let context = HADeployContext.live()
        let connection = SSHConnectionConfig(
            name: "ipad2", host: "127.0.0.1", port: port, user: "root",
            authentication: .privateKey(path: key, passphrase: nil), knownHostsPath: knownHosts,
            fileSystem: context.fileSystem, legacyAlgorithms: legacy, timeouts: SSHTimeouts(transfer: 600))
        let deployer = JailbreakDeployer(
            config: JailbreakDeployConfig(connection: connection, transfer: .sftp),
            fileSystem: context.fileSystem, clock: context.clock)
        let launch = try ResolvedLaunch(
            LaunchSettings(
                credentials: .homeAssistant(
                    server: .value("http://127.0.0.1:9"), token: SecretReference(environment: "HA_TOKEN")),
                dashboard: .named("bench"), kiosk: true, autoRegister: false, appSettings: [:], deployID: nil,
                deviceID: nil),
            environment: ["HA_TOKEN": "bench-token"])
        let clock = ContinuousClock()
        let start = clock.now
        let report = try await deployer.deploy(app: URL(fileURLWithPath: app), launch: launch)
        let seconds = Timing.seconds(clock.now - start)
        print(
            "BENCH hadeploy \(Timing.fixed(seconds, digits: 2)) s sent \(report.bytesSent) bytes in "
                + "\(report.filesSent.count) files (changed: \(report.changed))")
    }
}
