import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import Logging
import MobileDevice
import SSHTransport

/// What a device's driver is made with: this host's processes, files and clock, and the run's
/// environment. The driver itself is its backend's (`Backends`), from the plan alone. Secrets the configuration names are read from `environment` here, at the last moment.
public struct DriverRegistry: Sendable {
    public var host: HostPlatform
    /// The run's environment: the secrets the plan names, and `SSH_AUTH_SOCK`.
    public var environment: [String: String]
    /// Runs xcrun, rosettasim-ctl and pymobiledevice3.
    public var runner: any ProcessRunner
    /// This host's files: the artifacts, scratch files, crash reports copied out, install records.
    public var fileSystem: any FileSystem
    public var clock: any WallClock
    /// The run's working folder: where the tools the plan names by name are looked for (`PlanTools`).
    public var workingDirectory: URL

    public init(
        host: HostPlatform, environment: [String: String], runner: any ProcessRunner,
        fileSystem: any FileSystem, clock: any WallClock,
        workingDirectory: URL? = nil
    ) {
        self.host = host
        self.environment = environment
        self.runner = runner
        self.fileSystem = fileSystem
        self.clock = clock
        self.workingDirectory = workingDirectory ?? fileSystem.currentDirectory
    }

    /// The executable for a tool the plan names: a name the planner writes (`DeployPlan.fileTools`) is
    /// resolved here, at run time, as `PlanTools` says; anything else (a plan made in code) is kept.
    func tool(_ value: String) -> String {
        guard DeployPlan.fileTools.contains(value) else { return value }
        return PlanTools.resolve(
            value, environment: environment, workingDirectory: workingDirectory, fileSystem: fileSystem)
    }

    /// The device's driver, from its plan alone: its backend's (`Backends`).
    public func driver(for plan: DevicePlan) throws -> any DeviceDriver {
        try Backends.driver(for: plan, registry: self)
    }

    /// A simulator driver's configuration: simctl and rosettasim-ctl differ only in their tool's commands.
    func simulatorConfiguration<Commands>(
        _ plan: DevicePlan, _ simulator: SimulatorConfiguration, commands: Commands
    ) -> SimulatorDriverConfiguration<Commands> {
        let home = URL(fileURLWithPath: simulator.home)
        return SimulatorDriverConfiguration(
            label: plan.name,
            selector: SimulatorSelector(
                udid: simulator.udid, deviceType: simulator.deviceType, runtime: simulator.runtime),
            host: host, commands: commands,
            simulatorDevices: home.appendingPathComponent("Library/Developer/CoreSimulator/Devices"),
            diagnosticReports: home.appendingPathComponent("Library/Logs/DiagnosticReports"),
            scratchDirectory: URL(fileURLWithPath: simulator.scratchDirectory),
            deadlines: DriverDeadlines(plan: plan))
    }

    func sshDriver(_ plan: DevicePlan, _ ssh: SSHBackend.Configuration) throws -> any DeviceDriver {
        let config = try SSHDriver.config(ssh, plan: plan, environment: environment, fileSystem: fileSystem)
        return SSHDriver(
            deployer: JailbreakDeployer(config: config, fileSystem: fileSystem, clock: clock), plan: plan,
            workDirectory: URL(fileURLWithPath: ssh.workDirectory))
    }

    func usbDriver(_ plan: DevicePlan, _ usb: USBBackend.Configuration) throws -> any DeviceDriver {
        guard let udid = usb.udid else {
            throw TransportUnavailable(
                device: plan.name, transport: "usb",
                reason: "no UDID: set it in devices.yaml or .env (`idevice_id -l`)")
        }
        // The driver's own limits are the plan's: the install deadline sized to the app, the launch's.
        var timeouts = USBTimeouts()
        let deadlines = DriverDeadlines(plan: plan)
        if let install = deadlines.override(.install) { timeouts.install = .checkedSeconds(install) }
        if plan.step(.launch) != nil { timeouts.launch = deadlines.limit(.launch) }
        let options = USBDeviceOptions(
            fileSystem: fileSystem, clock: clock,
            stateDirectory: URL(fileURLWithPath: usb.installRecords),
            developerImageDirectories: usb.developerImages.map { URL(fileURLWithPath: $0) },
            timeouts: timeouts, logger: Logger(label: "hadeploy.usb"),
            // A crash at launch is also caught by the crash-report step; a short watch keeps redeploys quick.
            launchSettle: .milliseconds(300), network: usb.network)
        return USBDriver(
            udid: udid, name: plan.name, options: options,
            connectDeadline: deadlines.limit(.connect))
    }
}
