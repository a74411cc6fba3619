import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import MobileDevice

/// Drives a simulator through `xcrun simctl` (macOS): found by UDID or by device type + runtime,
/// booted and waited for, then install, launch with arguments, crash reports and screenshots.
public actor SimctlDriver: DeviceDriver, SimulatorDriving {
    public typealias Configuration = SimulatorDriverConfiguration<SimctlCommands>

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    nonisolated let fileSystem: any FileSystem
    var device: SimulatorDevice?

    public init(configuration: Configuration, runner: any ProcessRunner, fileSystem: any FileSystem) {
        self.configuration = configuration
        self.runner = runner
        self.fileSystem = fileSystem
    }

    func invoker(secrets: Set<String> = []) -> ToolInvoker {
        ToolInvoker(
            runner: runner, tool: "xcrun simctl", device: configuration.label,
            installHint: "install Xcode (simctl ships with it) on this Mac", secrets: secrets)
    }

    func requireMacOS(_ step: String) throws {
        guard configuration.host == .macOS else {
            throw AppleDriverError.needsMacOS(
                tool: "xcrun simctl", step: step, device: configuration.label, host: configuration.host)
        }
    }

    public func connect() async throws -> ConnectedDevice {
        try requireMacOS("connect")
        return try await locate(invoker(), list: configuration.commands.listDevices(), arch: nil)
    }

    /// Boots the simulator if it is not running, then waits until it has finished booting.
    public func prepare() async throws {
        try requireMacOS("mount")
        let sim = try await resolved()
        let tool = invoker()
        let limit = configuration.deadlines.limit(.mount)
        if !sim.isBooted {
            let boot = configuration.commands.boot(sim.udid)
            let output = try await tool.run(boot, step: "boot", timeout: limit)
            // Booted meanwhile (by Simulator.app or another run): simctl says so and exits 149.
            if output.status != 0 && !output.stderr.contains("current state: Booted") {
                throw tool.failure(
                    boot, output: output, step: "boot", fix: "open Simulator.app to see why it does not boot")
            }
        }
        _ = try await tool.checked(configuration.commands.bootStatus(sim.udid), step: "boot", timeout: limit)
        device?.state = "Booted"
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        try requireMacOS("install")
        let sim = try await resolved()
        let size = DriverDeadlines.size(of: artifact.path, in: fileSystem)
        if !force, try await isInstalled(artifact, on: sim) {
            progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "unchanged"))
            return .unchanged
        }
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "installing"))
        // A local copy into the simulator's container: fast, so 20 MB/s is pessimistic.
        _ = try await invoker().checked(
            configuration.commands.install(sim.udid, app: artifact.path), step: "install",
            timeout: configuration.deadlines.install(bytes: size),
            fix: "a simulator needs an .app built for the simulator SDK (flavour \(artifact.flavour))")
        progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "installed"))
        return .installed
    }

    /// Whether the simulator already has exactly this bundle: the installed copy (found with
    /// `simctl get_app_container`) has the same files with the same contents. Anything else — not
    /// installed, another build, an unreadable copy — installs.
    func isInstalled(_ artifact: Artifact, on sim: SimulatorDevice) async throws -> Bool {
        guard artifact.path.hasSuffix(".app") else { return false }
        let output = try await invoker().run(
            configuration.commands.appContainer(sim.udid, bundleID: artifact.bundleID), step: "install",
            timeout: configuration.deadlines.terminate)
        let installed = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard output.status == 0, installed.hasPrefix("/"),
            let current = try? ContentHasher.hash(
                of: URL(fileURLWithPath: installed), isDirectory: true, in: fileSystem),
            let wanted = try? ContentHasher.hash(
                of: URL(fileURLWithPath: artifact.path), isDirectory: true, in: fileSystem)
        else { return false }
        return current == wanted
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        try requireMacOS("launch")
        let sim = try await resolved()
        // The token goes into the app's defaults through cfprefsd (stdin), never into simctl's argv.
        let secrets = launch.secretValues
        if !launch.secretPreferences.isEmpty {
            try await storeDefaults(
                launch.secretPreferences, bundleID: artifact.bundleID, on: sim, secrets: secrets)
        }
        let command = configuration.commands.launch(
            sim.udid, bundleID: artifact.bundleID, arguments: launch.publicArguments,
            environment: configuration.launchEnvironment, secrets: secrets)
        _ = try await invoker(secrets: secrets).checked(
            command, step: "launch", timeout: configuration.deadlines.limit(.launch),
            fix: "is \(artifact.bundleID) installed on \(sim.name) (\(sim.runtimeName))?")
    }

    /// Merges `values` into the app's preferences domain: export (an absent domain is empty), merge,
    /// import — the other keys (the app's own settings) are kept.
    func storeDefaults(
        _ values: [String: PropertyListValue], bundleID: String, on sim: SimulatorDevice, secrets: Set<String>
    ) async throws {
        let exported = try await invoker().run(
            configuration.commands.exportDefaults(sim.udid, bundleID: bundleID), step: "launch",
            timeout: configuration.deadlines.terminate)
        let plist = try LaunchPreferences.defaultsDomain(values, mergedInto: exported)
        _ = try await invoker(secrets: secrets).checked(
            configuration.commands.importDefaults(
                sim.udid, bundleID: bundleID, plist: plist, secrets: secrets),
            step: "launch", timeout: configuration.deadlines.terminate,
            fix: "is \(sim.name) (\(sim.runtimeName)) booted?")
    }

    /// Stops the app; not running is not an error.
    public func terminate(_ artifact: Artifact) async throws {
        try requireMacOS("terminate")
        let sim = try await resolved()
        _ = try await invoker().run(
            configuration.commands.terminate(sim.udid, bundleID: artifact.bundleID), step: "terminate",
            timeout: configuration.deadlines.terminate)
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        try await copyCrashReports(of: artifact, since: since, into: directory)
    }

    /// The simulator's containers are local directories: `simctl get_app_container … data` names it.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try requireMacOS("verify")
        let sim = try await resolved()
        let output = try await invoker().checked(
            configuration.commands.dataContainer(sim.udid, bundleID: artifact.bundleID), step: "verify",
            timeout: configuration.deadlines.terminate,
            fix: "is \(artifact.bundleID) installed on \(sim.name)?")
        let container = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard container.hasPrefix("/") else {
            throw AppDataUnavailable("simctl named no data container for \(artifact.bundleID): \(container)")
        }
        return appDataFile(container: container, relativePath: relativePath)
    }

    public func screenshot() async throws -> Data {
        try requireMacOS("screenshot")
        let sim = try await resolved()
        let commands = configuration.commands
        return try await scratch.screenshot(invoker(), timeout: configuration.deadlines.limit(.screenshot)) {
            commands.screenshot(sim.udid, to: $0)
        }
    }
}
