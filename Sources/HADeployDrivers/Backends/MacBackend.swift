import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// This Mac running the Mac Catalyst build: `defaults`, `osascript`, `killall`, `open` (macOS).
public enum MacBackend: Backend {
    public static let kind = "mac"
    public static let words = [TransportWord("mac", drives: .device, thisMac: true)]
    public static let rollback: RollbackKind? = .mac

    public struct Configuration: Sendable, Hashable, Codable, PlanFileChecked {
        /// The user's home folder: the app's preferences, Documents and hadeploy's installed copy.
        public var home: String

        public init(home: String) { self.home = home }

        public mutating func visit(_ fields: inout PlanFileFields) {
            fields.home(&home, "home")
        }
    }

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        guard planning.twins == nil, takes(device) else { return nil }
        return .macOnly(planning, reason: "the Mac Catalyst app runs on this machine only when it is a Mac")
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        Configuration(home: planning.home)
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "this Mac (Mac Catalyst)"
    }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            connect: "check this Mac (sw_vers, uname -m)",
            install:
                "copy {build} (ditto) into \(MacAppLocations.installRootDisplay)/<bundle id>/ unless unchanged, "
                + "two renames swap it in, the copy it replaces kept in previous/",
            launch:
                "quit the running app (osascript quit, killall when it has not quit in time), merge the launch "
                + "settings into the app's defaults domain (defaults export, then defaults import with the plist "
                + "on stdin: the token is on no command line), open the installed copy",
            appLog: "the app's log (~/Documents/ha-log.txt; in its container if it is sandboxed)")
    }

    /// screencapture takes the whole desktop (other windows, notifications) and needs the Screen
    /// Recording permission: no screenshot of the Mac goes into a report.
    public static var screenshots: Bool { false }

    public static var platform: AppPlatform { .macCatalyst }

    /// One try: the Mac is this machine, there is nothing to wait for.
    public static var connectRetries: Int { 0 }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        MacDriver(
            configuration: MacDriver.Configuration(
                label: plan.name, host: registry.host, home: URL(fileURLWithPath: configuration.home),
                deadlines: DriverDeadlines(plan: plan)),
            runner: registry.runner, fileSystem: registry.fileSystem, clock: registry.clock)
    }
}
