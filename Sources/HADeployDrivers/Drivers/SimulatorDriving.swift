import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// What a simulator driver is told — simctl for current runtimes, rosettasim-ctl for legacy ones:
/// which simulator, its tool's commands, where the Mac keeps the simulators' files, the deadlines.
public struct SimulatorDriverConfiguration<Commands: Sendable>: Sendable {
    /// The device's name in devices.yaml, for messages.
    public var label: String
    public var selector: SimulatorSelector
    public var host: HostPlatform
    public var commands: Commands
    /// Extra environment for the app, passed as `SIMCTL_CHILD_*` on simctl's launch command.
    public var launchEnvironment: [String: String] = [:]
    /// `~/Library/Developer/CoreSimulator/Devices`, where rosettasim-ctl's launch finds the app's
    /// data container to write its preferences into.
    public var simulatorDevices: URL
    /// The Mac's `~/Library/Logs/DiagnosticReports`, where simulator apps' crash reports land.
    public var diagnosticReports: URL
    /// Where screenshots are written before being read back.
    public var scratchDirectory: URL
    public var deadlines: DriverDeadlines = .init()
}

/// What the two simulator drivers do alike: find the simulator once, scan the Mac's crash reports for
/// that simulator's, take screenshots through a scratch file, read files from local app containers.
protocol SimulatorDriving: Actor {
    associatedtype Commands: Sendable
    nonisolated var configuration: SimulatorDriverConfiguration<Commands> { get }
    nonisolated var fileSystem: any FileSystem { get }
    var device: SimulatorDevice? { get set }
    func connect() async throws -> ConnectedDevice
}

extension SimulatorDriving {
    /// Finds the configured simulator with the tool's `list` and keeps it for the later steps.
    func locate(_ invoker: ToolInvoker, list: ProcessCommand, arch: String?) async throws -> ConnectedDevice {
        let found = try await SimulatorLocator(invoker: invoker, selector: configuration.selector)
            .locate(list: list, timeout: configuration.deadlines.limit(.connect))
        device = found
        return ConnectedDevice(
            udid: found.udid, name: found.name, productType: found.deviceType, iosVersion: found.version,
            arch: arch)
    }

    func resolved() async throws -> SimulatorDevice {
        if let device { return device }
        _ = try await connect()
        guard let device else { throw CancellationError() }
        return device
    }

    var scratch: ScratchFolder {
        ScratchFolder(fileSystem: fileSystem, directory: configuration.scratchDirectory)
    }

    /// The crash reports of this simulator's app among the Mac's, copied into `directory`.
    func copyCrashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let sim = try await resolved()
        let scanner = CrashReportScanner(
            executable: artifact.executable, since: since, simulatorUDID: sim.udid, fileSystem: fileSystem)
        return try scanner.copyMatches(from: configuration.diagnosticReports, into: directory)
    }

    /// A file in the app's data container, which the tool named (`container`, a local path).
    func appDataFile(container: String, relativePath: String) -> Data? {
        AppContainerFile.read(container: container, relativePath: relativePath, in: fileSystem)
    }
}
