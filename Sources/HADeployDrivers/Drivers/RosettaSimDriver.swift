import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// Drives an x86_64 legacy simulator (iOS 9.3–14) through `rosettasim-ctl` (macOS), because
/// `simctl install/launch` hang on those runtimes. Its `launch` takes no app arguments, so the
/// arguments are written into the app's preferences before launching (see `LaunchDefaultsWriter`).
public actor RosettaSimDriver: DeviceDriver, SimulatorDriving {
    /// `commands` is nil when `.env` has no `ROSETTASIM_CTL`.
    public typealias Configuration = SimulatorDriverConfiguration<RosettaSimCommands?>

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    nonisolated let fileSystem: any FileSystem
    var device: SimulatorDevice?

    public init(configuration: Configuration, runner: any ProcessRunner, fileSystem: any FileSystem) {
        self.configuration = configuration
        self.runner = runner
        self.fileSystem = fileSystem
    }

    func tool(_ step: String, secrets: Set<String> = []) throws -> (RosettaSimCommands, ToolInvoker) {
        guard configuration.host == .macOS else {
            throw AppleDriverError.needsMacOS(
                tool: "rosettasim-ctl (legacy simulators)", step: step, device: configuration.label,
                host: configuration.host)
        }
        guard let commands = configuration.commands else {
            throw AppleDriverError(
                .toolMissing, step: step, device: configuration.label,
                reason: "rosettasim-ctl is not configured (ROSETTASIM_CTL is not set)",
                fix: "set ROSETTASIM_CTL in .env to the built rosettasim-ctl (RosettaSim's `make ctl`)")
        }
        let invoker = ToolInvoker(
            runner: runner, tool: "rosettasim-ctl", device: configuration.label,
            installHint: "build RosettaSim's rosettasim-ctl and point ROSETTASIM_CTL in .env at it",
            secrets: secrets)
        return (commands, invoker)
    }

    public func connect() async throws -> ConnectedDevice {
        let (commands, invoker) = try tool("connect")
        return try await locate(invoker, list: commands.listDevices(), arch: "x86_64")
    }

    /// Boots the simulator unless it is booted; `rosettasim-ctl boot` returns once it is (or fails).
    public func prepare() async throws {
        let (commands, invoker) = try tool("mount")
        let sim = try await resolved()
        guard !sim.isBooted else { return }
        _ = try await invoker.checked(
            commands.boot(sim.udid), step: "boot", timeout: configuration.deadlines.limit(.mount),
            fix: "open Simulator.app to see why the legacy runtime does not boot")
        device?.state = "Booted"
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        let (commands, invoker) = try tool("install")
        let sim = try await resolved()
        let size = DriverDeadlines.size(of: artifact.path, in: fileSystem)
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "installing"))
        _ = try await invoker.checked(
            commands.install(sim.udid, app: artifact.path), step: "install",
            timeout: configuration.deadlines.install(bytes: size),
            fix: "legacy simulators need an x86_64 .app from the rosettasim flavour")
        progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "installed"))
        return .installed
    }

    /// Terminates the app, writes the arguments into its preferences, then launches it.
    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        let (commands, invoker) = try tool("launch", secrets: launch.secretValues)
        let sim = try await resolved()
        let limit = configuration.deadlines.limit(.launch)
        let writer = LaunchDefaultsWriter(
            simulatorData: configuration.simulatorDevices.appendingPathComponent(sim.udid)
                .appendingPathComponent("data"),
            bundleID: artifact.bundleID, fileSystem: fileSystem)
        // Not running is fine: terminate's status is not checked.
        _ = try await invoker.run(
            commands.terminate(sim.udid, bundleID: artifact.bundleID), step: "launch", timeout: limit)
        var container = writer.dataContainer()
        if container == nil {
            // A fresh install has no data container until its first launch: launch once to create it.
            _ = try await invoker.checked(
                commands.launch(sim.udid, bundleID: artifact.bundleID), step: "launch", timeout: limit)
            _ = try await invoker.run(
                commands.terminate(sim.udid, bundleID: artifact.bundleID), step: "launch", timeout: limit)
            container = writer.dataContainer()
        }
        guard let container else {
            throw AppleDriverError(
                .unavailable, step: "launch", device: configuration.label,
                reason:
                    "\(artifact.bundleID) has no data container on \(sim.name) even after a first launch, "
                    + "so its launch arguments cannot be handed over",
                fix: "launch the app once by hand in Simulator.app, then deploy again")
        }
        do {
            _ = try writer.write(launch.preferences, into: container)
        } catch {
            throw AppleDriverError(
                .failed, step: "launch", device: configuration.label,
                reason:
                    "could not write the app's preferences in \(container.path): \(invoker.redact("\(error)"))"
            )
        }
        _ = try await invoker.checked(
            commands.launch(sim.udid, bundleID: artifact.bundleID), step: "launch", timeout: limit,
            fix: "is \(artifact.bundleID) installed on \(sim.name) (\(sim.runtimeName))?")
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        try await copyCrashReports(of: artifact, since: since, into: directory)
    }

    /// `rosettasim-ctl appinfo` names the data container; the simulator's files are local.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        let (commands, invoker) = try tool("verify")
        let sim = try await resolved()
        let output = try await invoker.checked(
            commands.appInfo(sim.udid, bundleID: artifact.bundleID), step: "verify",
            timeout: configuration.deadlines.terminate,
            fix: "is \(artifact.bundleID) installed on \(sim.name)?")
        guard let container = Self.dataContainer(inAppInfo: output.stdout) else {
            throw AppDataUnavailable("rosettasim-ctl appinfo named no DataContainer for \(artifact.bundleID)")
        }
        return appDataFile(container: container, relativePath: relativePath)
    }

    /// The `DataContainer` value of `appinfo`'s output (JSON or an old-style plist), as a path.
    static func dataContainer(inAppInfo text: String) -> String? {
        guard let key = text.range(of: "DataContainer") else { return nil }
        // Past the key's own closing quote (JSON) and the separator (`:` in JSON, `=` in a plist).
        guard let separator = text[key.upperBound...].firstIndex(where: { $0 == ":" || $0 == "=" }) else {
            return nil
        }
        let rest = text[text.index(after: separator)...]
        guard let open = rest.firstIndex(of: "\"") else { return nil }
        let value = rest[rest.index(after: open)...].prefix { $0 != "\"" }
        var path = value.replacingOccurrences(of: "\\/", with: "/")
        if path.hasPrefix("file://") {
            path = URL(string: path)?.path ?? String(path.dropFirst("file://".count))
        }
        return path.hasPrefix("/") ? path : nil
    }

    public func screenshot() async throws -> Data {
        let (commands, invoker) = try tool("screenshot")
        let sim = try await resolved()
        return try await scratch.screenshot(invoker, timeout: configuration.deadlines.limit(.screenshot)) {
            commands.screenshot(sim.udid, to: $0)
        }
    }
}
