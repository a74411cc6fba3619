import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// A simulator (simctl, rosettasim-ctl): which one, and where its tools and files are.
public struct SimulatorConfiguration: Sendable, Hashable, Codable, PlanFileChecked {
    public var udid: String?
    public var deviceType: String?
    public var runtime: String
    /// `DEVELOPER_DIR` for the flavour's Xcode (simctl).
    public var developerDir: String?
    /// `rosettasim-ctl` when `ROSETTASIM_CTL` was set when planning (a name: the run resolves it from
    /// its own `ROSETTASIM_CTL`, `PlanTools`); nil: not installed.
    public var tool: String?
    /// The user's home folder: crash reports and the simulators' data live under it.
    public var home: String
    public var scratchDirectory: String

    public init(
        udid: String?, deviceType: String?, runtime: String, developerDir: String?, tool: String?,
        home: String, scratchDirectory: String
    ) {
        self.udid = udid
        self.deviceType = deviceType
        self.runtime = runtime
        self.developerDir = developerDir
        self.tool = tool
        self.home = home
        self.scratchDirectory = scratchDirectory
    }

    public mutating func visit(_ fields: inout PlanFileFields) {
        fields.developerDirectory(developerDir, "developerDir")
        fields.tool(tool, named: "rosettasim-ctl", "tool")
        fields.statePath(&scratchDirectory, "scratchDirectory")
        fields.home(&home, "home")
    }
}

/// `xcrun simctl` (macOS).
public enum SimctlBackend: Backend {
    public static let kind = "simctl"
    public static let words = [TransportWord("simctl", drives: .simulator)]
    public typealias Configuration = SimulatorConfiguration

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        guard planning.twins == nil, takes(device) else { return nil }
        return .macOnly(planning, reason: "xcrun simctl needs macOS")
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        planning.simulator(device, udid: udid, tool: nil, scratch: "simctl")
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "xcrun simctl"
    }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            install: "install {build} unless unchanged",
            launch:
                "launch with the arguments above (the token through the app's preferences, never a command line)"
        )
    }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        SimctlDriver(
            configuration: registry.simulatorConfiguration(
                plan, configuration, commands: SimctlCommands(developerDir: configuration.developerDir)),
            runner: registry.runner, fileSystem: registry.fileSystem)
    }
}

/// `rosettasim-ctl` (macOS, x86_64 legacy runtimes).
public enum RosettaSimBackend: Backend {
    public static let kind = "rosettasim"
    public static let words = [TransportWord("rosettasim", drives: .simulator)]
    public typealias Configuration = SimulatorConfiguration

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        guard planning.twins == nil, takes(device) else { return nil }
        return .macOnly(planning, reason: "rosettasim-ctl needs macOS")
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        // By name: the run resolves it (ROSETTASIM_CTL of its environment, `PlanTools`).
        let tool = planning.nonEmpty(planning.variables["ROSETTASIM_CTL"]).map { _ in "rosettasim-ctl" }
        return planning.simulator(device, udid: udid, tool: tool, scratch: "rosettasim")
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "rosettasim-ctl"
    }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            install: "install {build} unless unchanged",
            launch: "write the launch settings into the app's preferences plist, then rosettasim-ctl launch")
    }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        RosettaSimDriver(
            configuration: registry.simulatorConfiguration(
                plan, configuration,
                commands: configuration.tool.map { RosettaSimCommands(executable: registry.tool($0)) }),
            runner: registry.runner, fileSystem: registry.fileSystem)
    }
}
