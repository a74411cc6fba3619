/// The virtual twins a run deploys to instead of the real devices (`--virtual`): their usbmuxd and
/// each twin's UDID. Started by the CLI (the emulator is not a dependency of the Kit) and handed in.
public struct VirtualTwins: Sendable, Hashable {
    /// `USBMUXD_SOCKET_ADDRESS` of the twins' usbmuxd.
    public var address: String
    /// Device id (`mini4`) → the twin's UDID.
    public var udids: [String: String]
    /// Device id → why it has no twin.
    public var unavailable: [String: String]
    /// Device id → why its twin, which this host should run, did not start (a failure, not a skip).
    public var failed: [String: String] = [:]
    /// Device id (`ipad2`) → its jailbroken twin, reached over SSH like the real device.
    public var jailbroken: [String: JailbrokenTwinEndpoint]

    public init(
        address: String, udids: [String: String], unavailable: [String: String],
        jailbroken: [String: JailbrokenTwinEndpoint] = [:]
    ) {
        self.address = address
        self.udids = udids
        self.unavailable = unavailable
        self.jailbroken = jailbroken
    }
}

/// What the planner needs to know about where devices are: this host, its usbmuxd, and the
/// virtual twins when a run uses them.
public struct Topology: Sendable, Hashable {
    public var host: HostPlatform
    /// `USBMUXD_SOCKET_ADDRESS` of this process's environment (nil: the system usbmuxd).
    public var localUsbmuxd: String?
    public var virtual: VirtualTwins?

    public init(host: HostPlatform, localUsbmuxd: String? = nil, virtual: VirtualTwins? = nil) {
        self.host = host
        self.localUsbmuxd = localUsbmuxd
        self.virtual = virtual
    }

    /// This process's topology: the platform and `USBMUXD_SOCKET_ADDRESS`.
    public static func current(environment: [String: String]) -> Topology {
        Topology(
            host: .current,
            localUsbmuxd: environment["USBMUXD_SOCKET_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 })
    }
}

/// Where a run keeps its files and finds its tools, resolved by the caller (the planner reads no files).
public struct HostPaths: Sendable, Hashable {
    /// hadeploy's state folder (`--state`), absolute.
    public var stateDirectory: String
    /// The home folder when the variables have no `HOME`.
    public var home: String
    /// Developer Disk Image folders replacing devices.yaml's `ddi_dir` (the virtual twins' images).
    public var developerImages: [String]?
    /// The flavours' Xcode developer folders that exist on this Mac; nil: not looked for (taken as
    /// there, as for `plan --as-host macos`).
    public var installedDeveloperDirectories: Set<String>?

    public init(
        stateDirectory: String = ".hadeploy", home: String = "~", developerImages: [String]? = nil,
        installedDeveloperDirectories: Set<String>? = nil
    ) {
        self.stateDirectory = stateDirectory
        self.home = home
        self.developerImages = developerImages
        self.installedDeveloperDirectories = installedDeveloperDirectories
    }
}
