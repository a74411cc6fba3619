import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// `xcrun devicectl` (iOS 17+, macOS).
public enum DevicectlBackend: Backend {
    public static let kind = "devicectl"
    /// iOS 17 and later, also found by model; over Wi-Fi too (pymobiledevice3 on Linux).
    public static let word = TransportWord(
        "devicectl", drives: .device, wifi: true, findsByModel: true, oldestIOS: 17, olderIOSWord: "usb")
    public static let words = [word]
    public static let twin: TwinKind? = .lockdown
    public static let throughUsbmuxd = true

    public struct Configuration: Sendable, Hashable, Codable, PlanFileChecked {
        /// The UDID, CoreDevice identifier or name passed to `--device`; empty when `model` finds it.
        public var device: String
        /// With no UDID: the one physical device devicectl lists whose model starts with this.
        public var model: String?
        public var developerDir: String?
        public var scratchDirectory: String

        public init(device: String, model: String? = nil, developerDir: String?, scratchDirectory: String) {
            self.device = device
            self.model = model
            self.developerDir = developerDir
            self.scratchDirectory = scratchDirectory
        }

        public mutating func visit(_ fields: inout PlanFileFields) {
            fields.developerDirectory(developerDir, "developerDir")
            fields.statePath(&scratchDirectory, "scratchDirectory")
        }
    }

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        // On Linux an iOS 17+ device is the pymobiledevice3 backend's.
        guard planning.twins == nil, takes(device), planning.host == .macOS else {
            return nil
        }
        return BackendChoice()
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        // No UDID (`${IPAD_PRO_DEVICECTL_ID:-}` unset): found by its model when it has one, as the
        // app's script finds its iPad Pro, else by its name.
        let udid = udid.flatMap { $0.isEmpty ? nil : $0 }
        let model = udid == nil ? device.model : nil
        return Configuration(
            device: udid ?? (model == nil ? device.name : ""), model: model,
            developerDir: planning.developerDir(device.flavour),
            scratchDirectory: planning.state + "/devicectl")
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "xcrun devicectl" + (configuration.model.map { " (the one physical \($0) it lists)" } ?? "")
    }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            install: "install {build} unless unchanged",
            launch:
                "launch with the arguments above (the token through the app's preferences, never a command line)"
        )
    }

    /// devicectl has no screenshot command; the plan says so rather than failing later.
    public static var screenshots: Bool { false }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        DevicectlDriver(
            configuration: DevicectlDriver.Configuration(
                label: plan.name, device: configuration.device, model: configuration.model,
                host: registry.host,
                commands: DevicectlCommands(developerDir: configuration.developerDir),
                scratchDirectory: URL(fileURLWithPath: configuration.scratchDirectory),
                deadlines: DriverDeadlines(plan: plan)),
            runner: registry.runner, fileSystem: registry.fileSystem)
    }
}
