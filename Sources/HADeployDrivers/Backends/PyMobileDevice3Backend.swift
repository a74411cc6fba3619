import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// iOS 17+ from Linux: the install over usbmuxd (libimobiledevice), the launch and screenshot through
/// pymobiledevice3's userspace tunnel (the iOS 17.4 developer path).
public enum PyMobileDevice3Backend: Backend {
    public static let kind = "pymobiledevice3"
    /// devicectl's devices, on Linux.
    public static let words = [DevicectlBackend.word]
    public static let twin: TwinKind? = .lockdown
    public static let throughUsbmuxd = true

    public struct Configuration: Sendable, Hashable, Codable, PlanFileChecked {
        /// `pymobiledevice3`: a name, resolved by the run (`PlanTools`: `PYMOBILEDEVICE3` of its
        /// environment, the working folder's `.venv-pmd3`, or PATH). A plan file may name no other.
        public var executable: String
        public var scratchDirectory: String
        /// The install's settings (libimobiledevice over the plan's route).
        public var usb: USBBackend.Configuration

        public init(executable: String, scratchDirectory: String, usb: USBBackend.Configuration) {
            self.executable = executable
            self.scratchDirectory = scratchDirectory
            self.usb = usb
        }

        public mutating func visit(_ fields: inout PlanFileFields) {
            fields.tool(executable, named: "pymobiledevice3", "executable")
            fields.statePath(&scratchDirectory, "scratchDirectory")
            fields.nested(&usb, "usb")
        }
    }

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        guard takes(device) else { return nil }
        if let twins = planning.twins {
            // An iOS 17+ device's twin speaks the iOS 17.4 developer path: it is driven as the real
            // device is from Linux.
            guard twins.udids[device.id] != nil else { return nil }
            return BackendChoice(usbRoute: .virtual(address: twins.address), lookup: planning.lookup(device))
        }
        guard planning.host != .macOS else { return nil }
        // `network: true`: over Wi-Fi, through hadeploy's own usbmuxd (lockdown, then its tunnel).
        return BackendChoice(usbRoute: planning.route(device), lookup: planning.lookup(device))
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        // By name: the run resolves it as `PlanTools` says, so a plan file names no path.
        Configuration(
            executable: "pymobiledevice3", scratchDirectory: planning.state + "/pymobiledevice3",
            usb: planning.usb(device, udid: udid, lookup: choice.lookup))
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "pymobiledevice3 (install via \(planned.usbRoute.map(\.description) ?? "usbmuxd"))"
    }

    public static func mounts(_ device: Device) -> Bool { true }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            mount: "pymobiledevice3 mounter auto-mount (personalized image)",
            install: "install {build} over usbmuxd unless unchanged",
            launch:
                "launch through pymobiledevice3's tunnel (its argument list on stdin, never a command line)")
    }

    /// iOS 17+ from Linux: what pymobiledevice3 needs, there or missing, in one line.
    public static func readiness(_ device: Device, udid: String, route: USBRoute?, host: BackendHostTools)
        async
        -> String?
    {
        let fileSystem = host.fileSystem
        return await PyMobileDevice3Driver.make(
            label: device.name, udid: udid, route: route,
            executable: PyMobileDevice3Driver.executable(
                variables: host.variables, checkout: fileSystem.currentDirectory, fileSystem: fileSystem),
            runner: host.runner, fileSystem: fileSystem,
            scratchDirectory: fileSystem.temporaryDirectory.appendingPathComponent(
                "hadeploy-pymobiledevice3"),
            helper: false
        ).summary()
    }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        // `${IPAD_PRO_DEVICECTL_ID:-}` unset: only devicectl (a Mac) finds a device by its model.
        if configuration.usb.udid?.isEmpty == true {
            throw TransportUnavailable(
                device: plan.name, transport: "pymobiledevice3",
                reason: "it has no UDID here: set the key devices.yaml names in .env (finding the one "
                    + "device of a model needs devicectl, on a Mac)")
        }
        return ModernLinuxDriver(
            usb: try registry.usbDriver(plan, configuration.usb),
            tunnel: PyMobileDevice3Driver.make(
                label: plan.name, udid: configuration.usb.udid ?? plan.name, route: plan.backend.usbRoute,
                executable: registry.tool(configuration.executable), runner: registry.runner,
                fileSystem: registry.fileSystem,
                scratchDirectory: URL(fileURLWithPath: configuration.scratchDirectory),
                deadlines: DriverDeadlines(plan: plan)))
    }
}
