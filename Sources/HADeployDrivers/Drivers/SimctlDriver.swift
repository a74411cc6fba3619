import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import MobileDevice

/// Drives a simulator through `xcrun simctl` (macOS): found by UDID or by device type + runtime,
/// booted and waited for, then install, launch with arguments, crash reports and screenshots.
public actor SimctlDriver: DeviceDriver {
    public struct Configuration: Sendable {
        /// The device's name in devices.yaml, for messages.
        public var label: String
        public var selector: SimulatorSelector
        public var host: HostPlatform
        public var commands: SimctlCommands
        /// Extra environment for the app, passed as `SIMCTL_CHILD_*` on the launch command.
        public var launchEnvironment: [String: String]
        /// The Mac's `~/Library/Logs/DiagnosticReports`, where simulator apps' crash reports land.
        public var diagnosticReports: URL
        /// Where screenshots are written before being read back.
        public var scratchDirectory: URL
        public var deadlines: DriverDeadlines

        public init(
            label: String, selector: SimulatorSelector, host: HostPlatform,
            commands: SimctlCommands = .init(),
            launchEnvironment: [String: String] = [:], diagnosticReports: URL, scratchDirectory: URL,
            deadlines: DriverDeadlines = .init()
        ) {
            self.label = label
            self.selector = selector
            self.host = host
            self.commands = commands
            self.launchEnvironment = launchEnvironment
            self.diagnosticReports = diagnosticReports
            self.scratchDirectory = scratchDirectory
            self.deadlines = deadlines
        }
    }

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    private var device: SimulatorDevice?

    public init(configuration: Configuration, runner: any ProcessRunner) {
        self.configuration = configuration
        self.runner = runner
    }

    /// The driver for a `simctl` device of the matrix. `variables` are `.env` merged with the environment
    /// (`HOME` locates the crash reports; the flavour's `xcode` becomes `DEVELOPER_DIR`).
    public static func make(
        plan: DevicePlan, device: Device?, matrix: DeviceMatrix, variables: [String: String],
        host: HostPlatform,
        runner: any ProcessRunner, scratchDirectory: URL
    ) -> SimctlDriver {
        let home = variables["HOME"] ?? NSHomeDirectory()
        return SimctlDriver(
            configuration: Configuration(
                label: plan.name,
                selector: SimulatorSelector(
                    udid: plan.udid?.value.flatMap { $0.isEmpty ? nil : $0 },
                    // `${SIM_IPAD_NAME:-iPad (10th generation)}`: the old scripts' .env key, or the default.
                    deviceType: device?.simulatorDeviceType.map { ConfigValue($0).display(variables) },
                    runtime: device?.simulatorRuntime ?? "iOS \(plan.ios)"),
                host: host,
                commands: SimctlCommands(
                    developerDir: developerDir(matrix: matrix, flavour: plan.flavour, variables)),
                diagnosticReports: URL(fileURLWithPath: home).appendingPathComponent(
                    "Library/Logs/DiagnosticReports"),
                scratchDirectory: scratchDirectory, deadlines: DriverDeadlines(overrides: plan.timeouts)),
            runner: runner)
    }

    /// `<xcode>/Contents/Developer` for the flavour's Xcode, when it resolves.
    static func developerDir(matrix: DeviceMatrix, flavour: String, _ variables: [String: String]) -> String?
    {
        guard let xcode = matrix.flavour(named: flavour)?.xcode,
            case .value(let path) = xcode.resolve(variables), !path.isEmpty
        else { return nil }
        let expanded = HomePath.expand(path, variables)
        return expanded.hasSuffix("/Contents/Developer") ? expanded : expanded + "/Contents/Developer"
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
        let found = try await SimulatorLocator(invoker: invoker(), selector: configuration.selector)
            .locate(
                list: configuration.commands.listDevices(), timeout: configuration.deadlines.limit("connect"))
        device = found
        return ConnectedDevice(
            udid: found.udid, name: found.name, productType: found.deviceType, iosVersion: found.version,
            arch: nil)
    }

    func resolved() async throws -> SimulatorDevice {
        if let device { return device }
        _ = try await connect()
        guard let device else { throw CancellationError() }
        return device
    }

    /// Boots the simulator if it is not running, then waits until it has finished booting.
    public func prepare() async throws {
        try requireMacOS("mount")
        let sim = try await resolved()
        let tool = invoker()
        let limit = configuration.deadlines.limit("mount")
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
        let size = DriverDeadlines.size(of: artifact.path)
        if !force, try await isInstalled(artifact, on: sim) {
            progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "unchanged"))
            return .unchanged
        }
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "installing"))
        // A local copy into the simulator's container: fast, so 20 MB/s is pessimistic.
        _ = try await invoker().checked(
            configuration.commands.install(sim.udid, app: artifact.path), step: "install",
            timeout: configuration.deadlines.install(bytes: size, bytesPerSecond: 20_000_000),
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
            timeout: configuration.deadlines.limit("terminate"))
        let installed = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard output.status == 0, installed.hasPrefix("/"),
            let current = try? ContentHasher.hash(
                of: URL(fileURLWithPath: installed), isDirectory: true, in: LiveFileSystem()),
            let wanted = try? ContentHasher.hash(
                of: URL(fileURLWithPath: artifact.path), isDirectory: true, in: LiveFileSystem())
        else { return false }
        return current == wanted
    }

    public func launch(_ artifact: Artifact, arguments: [String], secrets: Set<String>) async throws {
        try requireMacOS("launch")
        let sim = try await resolved()
        // The token goes into the app's defaults through cfprefsd (stdin), never into simctl's argv.
        let settings = SecretLaunchSettings(arguments: arguments, secrets: secrets)
        if !settings.secretDefaults.isEmpty {
            try await storeDefaults(
                settings.secretDefaults, bundleID: artifact.bundleID, on: sim, secrets: secrets)
        }
        let command = configuration.commands.launch(
            sim.udid, bundleID: artifact.bundleID, arguments: settings.publicArguments,
            environment: configuration.launchEnvironment, secrets: secrets)
        _ = try await invoker(secrets: secrets).checked(
            command, step: "launch", timeout: configuration.deadlines.limit("launch"),
            fix: "is \(artifact.bundleID) installed on \(sim.name) (\(sim.runtimeName))?")
    }

    /// Merges `values` into the app's preferences domain: export (an absent domain is empty), merge,
    /// import — the other keys (the app's own settings) are kept.
    func storeDefaults(
        _ values: [String: String], bundleID: String, on sim: SimulatorDevice, secrets: Set<String>
    ) async throws {
        let exported = try await invoker().run(
            configuration.commands.exportDefaults(sim.udid, bundleID: bundleID), step: "launch",
            timeout: configuration.deadlines.limit("terminate"))
        var merged: [String: Any] = [:]
        if exported.status == 0,
            let existing = try? PropertyListSerialization.propertyList(
                from: exported.standardOutput, format: nil)
                as? [String: Any]
        {
            merged = existing
        }
        for (key, value) in values { merged[key] = value }
        let plist = try PropertyListValue.encode(merged, .xml)
        _ = try await invoker(secrets: secrets).checked(
            configuration.commands.importDefaults(
                sim.udid, bundleID: bundleID, plist: plist, secrets: secrets),
            step: "launch", timeout: configuration.deadlines.limit("terminate"),
            fix: "is \(sim.name) (\(sim.runtimeName)) booted?")
    }

    /// Stops the app; not running is not an error.
    public func terminate(_ artifact: Artifact) async throws {
        try requireMacOS("terminate")
        let sim = try await resolved()
        _ = try await invoker().run(
            configuration.commands.terminate(sim.udid, bundleID: artifact.bundleID), step: "terminate",
            timeout: configuration.deadlines.limit("terminate"))
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let sim = try await resolved()
        let scanner = CrashReportScanner(
            executable: artifact.executable, since: since, simulatorUDID: sim.udid)
        return try scanner.copyMatches(from: configuration.diagnosticReports, into: directory)
    }

    /// The simulator's containers are local directories: `simctl get_app_container … data` names it.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try requireMacOS("verify")
        let sim = try await resolved()
        let output = try await invoker().checked(
            configuration.commands.dataContainer(sim.udid, bundleID: artifact.bundleID), step: "verify",
            timeout: configuration.deadlines.limit("terminate"),
            fix: "is \(artifact.bundleID) installed on \(sim.name)?")
        let container = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard container.hasPrefix("/") else {
            throw AppDataUnavailable("simctl named no data container for \(artifact.bundleID): \(container)")
        }
        return AppContainerFile.read(container: container, relativePath: relativePath)
    }

    public func screenshot() async throws -> Data {
        try requireMacOS("screenshot")
        let sim = try await resolved()
        let file = configuration.scratchDirectory.appendingPathComponent("hadeploy-\(UUID().uuidString).png")
        try FileManager.default.createDirectory(
            at: configuration.scratchDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await invoker().checked(
            configuration.commands.screenshot(sim.udid, to: file.path), step: "screenshot",
            timeout: configuration.deadlines.limit("screenshot"))
        return try ScreenshotFile.read(file, step: "screenshot", device: configuration.label)
    }
}
