import DeployModel
import DeviceSpec
import HADeployCore

/// libimobiledevice through a usbmuxd — this machine's, a twin's, or a USB host's over SSH — by the
/// device's USB entry, or (Wi-Fi) its Network one.
public enum USBBackend: Backend {
    public static let kind = "usb"
    public static let words = [TransportWord("usb", drives: .device, wifi: true)]
    public static let twin: TwinKind? = .lockdown
    public static let throughUsbmuxd = true

    /// libimobiledevice's settings (the route is the plan's `usbRoute`).
    public struct Configuration: Sendable, Hashable, Codable, PlanFileChecked {
        /// nil: not set (the device fails at connect, saying so).
        public var udid: String?
        /// Developer Disk Image folders, searched in order (iOS 16 and older).
        public var developerImages: [String]
        /// Where installs are remembered (an unchanged app is not sent again).
        public var installRecords: String
        /// Reached through usbmuxd's network entry (Wi-Fi sync).
        public var network: Bool

        public init(udid: String?, developerImages: [String], installRecords: String, network: Bool) {
            self.udid = udid
            self.developerImages = developerImages
            self.installRecords = installRecords
            self.network = network
        }

        public mutating func visit(_ fields: inout PlanFileFields) {
            fields.statePath(&installRecords, "installRecords")
        }
    }

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        if let twins = planning.twins {
            // A network device's twin is a network twin: the same lookup reaches it.
            // A device whose `fallback_transport:` is usb (the iPad 2 plugged in here) too, when its twin
            // is a usbmuxd one.
            let word = takes(device) || words.contains { $0.word == device.fallbackTransport }
            guard word, twins.udids[device.id] != nil else { return nil }
            return BackendChoice(usbRoute: .virtual(address: twins.address), lookup: planning.lookup(device))
        }
        guard takes(device) else { return nil }
        return BackendChoice(usbRoute: planning.route(device), lookup: planning.lookup(device))
    }

    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        planning.usb(device, udid: udid, lookup: choice.lookup)
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        let route = planned.usbRoute.map(\.description) ?? "usbmuxd"
        return planned.lookup == .network ? "Wi-Fi via \(route) (its network lookup)" : "usb via \(route)"
    }

    public static func mounts(_ device: Device) -> Bool { device.iosMajor < 17 }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            mount: "mount the Developer Disk Image if it is not mounted",
            // installation_proxy Upgrade when the app is there: its data container is kept.
            install:
                "install {build} unless unchanged (an upgrade in place when installed: the app's data is kept)",
            // debugserver hands them to the app itself: on no command line of this computer.
            launch: "launch with the arguments above (through debugserver, as the app's own arguments)")
    }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        try registry.usbDriver(plan, configuration)
    }
}
