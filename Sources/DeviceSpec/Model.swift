import HADeployCore

/// CPU architectures the matrix deals with.
public enum Arch: String, Sendable, Codable, CaseIterable {
    case armv7, arm64, arm64e, x86_64
}

public enum DeviceKind: String, Sendable, Codable, CaseIterable {
    case device, simulator
}

/// One way of building the app: which Xcode, which architectures, which deployment target.
public struct Flavour: Sendable, Hashable, Codable {
    public var name: String
    /// The Xcode installation (`DEVELOPER_DIR` is derived from it; never `xcode-select`).
    public var xcode: ConfigValue?
    public var archs: [Arch]
    public var deploymentTarget: String
    /// `iphoneos`, `iphonesimulator`, or `maccatalyst` (the Mac Catalyst variant of the iOS target).
    public var sdk: String
    public var configuration: String
    public var scheme: String?
    /// Extra build settings passed to xcodebuild (e.g. MERGED_BINARY_TYPE=none).
    public var settings: [String: String]
    /// The app's own build command (`scripts/build.sh device`), run instead of xcodebuild for a recipe
    /// xcodebuild alone cannot make; it prints the built `.app`'s path as its last line.
    public var script: String?
    public var location: SourceLocation

    /// Builds the Mac Catalyst variant (`-destination 'platform=macOS,variant=Mac Catalyst'`).
    public var isMacCatalyst: Bool { sdk == Self.macCatalystSDK }

    /// hadeploy's name for the Mac Catalyst variant: also the suffix of its products folder
    /// (`Debug-maccatalyst`), as `iphoneos` is of `Debug-iphoneos`.
    public static let macCatalystSDK = "maccatalyst"
    public static let sdks = ["iphoneos", "iphonesimulator", macCatalystSDK]

    public init(
        name: String, xcode: ConfigValue?, archs: [Arch], deploymentTarget: String, sdk: String,
        configuration: String, scheme: String?, settings: [String: String], script: String? = nil,
        location: SourceLocation
    ) {
        self.name = name
        self.xcode = xcode
        self.archs = archs
        self.deploymentTarget = deploymentTarget
        self.sdk = sdk
        self.configuration = configuration
        self.scheme = scheme
        self.settings = settings
        self.script = script
        self.location = location
    }
}

/// Per-device SSH settings for jailbroken devices (and `usb_host`).
public struct SSHSettings: Sendable, Hashable, Codable {
    public var user: String
    public var port: Int
    /// Private key path; nil means the ssh agent.
    public var key: ConfigValue?
    /// The `.env` key holding the password, if password auth is used (never a flag).
    public var passwordEnv: String?
    /// Enables ssh-rsa host keys, SHA-1 key exchange, CBC ciphers and hmac-sha1 for this device only.
    public var legacyAlgorithms: Bool
    /// Overrides of the remote commands (install_dir, refresh, launch, kill, screenshot).
    public var commands: [String: String]

    public init(
        user: String = "root", port: Int = 22, key: ConfigValue? = nil, passwordEnv: String? = nil,
        legacyAlgorithms: Bool = false, commands: [String: String] = [:]
    ) {
        self.user = user
        self.port = port
        self.key = key
        self.passwordEnv = passwordEnv
        self.legacyAlgorithms = legacyAlgorithms
        self.commands = commands
    }
}

/// One device (or simulator) of the matrix.
public struct Device: Sendable, Hashable, Codable {
    /// The key in devices.yaml (`ipad2`): the word users type.
    public var id: String
    public var name: String
    public var aliases: [String]
    public var kind: DeviceKind
    public var transport: Transport
    /// Used when the primary transport cannot reach the device (the iPad 2: SSH, else USB).
    public var fallbackTransport: Transport?
    public var udid: ConfigValue?
    public var host: ConfigValue?
    /// `ssh://user@host` of a machine whose usbmuxd this USB device is plugged into.
    public var usbHost: ConfigValue?
    public var productType: String?
    /// The iOS version; for a `mac` device, optional and then empty (the Mac says its macOS version).
    public var iosVersion: String
    public var arch: Arch
    public var flavour: String
    /// nil: `-HAKioskMode` is not sent and the device keeps its own setting (the app applies the
    /// key only when present).
    public var kiosk: Bool?
    /// Extra NSUserDefaults keys for the app (`app_settings: {HAThemeMode: 2}`), typed as it reads them.
    public var appSettings: AppSettings = [:]
    /// The app's Home Assistant device integration is on for this device (`-HAAutoRegister YES`):
    /// its `mobile_app` entry is evidence of what it loaded.
    public var haIntegration: Bool = false
    /// The device's name in Home Assistant's mobile_app integration, when not its iOS device name.
    public var haDevice: String?
    /// The app build sends the `ha_dashboard_loaded` event (not the released app): hadeploy then
    /// sends `-HADeployID`/`-HADeviceID` and waits for it.
    public var loadedEvent: Bool = false
    /// false: install (upgrading in place, the app's data kept) and stop — the device keeps its own
    /// settings, as the old scripts treated the iPad mini 4.
    public var launch: Bool = true
    /// Reached through usbmuxd's network lookup: a Wi-Fi-synced device (`ideviceinstaller -n`), to
    /// which libimobiledevice connects directly over TCP at the address usbmuxd lists.
    public var network: Bool = false
    /// A Wi-Fi device's host name or IP address (`address:`, `${VAR}` allowed): where hadeploy's
    /// usbmuxd looks for it besides multicast DNS (a network that does not pass mDNS, another subnet).
    public var address: ConfigValue? = nil
    public var dashboard: String?
    /// How long to wait for proof that the dashboard loaded.
    public var verificationTimeout: Double
    /// Per-step deadline overrides in seconds (connect, install, launch, screenshot...).
    public var timeouts: [String: Double]
    public var ssh: SSHSettings?
    public var ddiDir: ConfigValue?
    /// Simulator device type and runtime names, for finding one without a UDID.
    public var simulatorDeviceType: String?
    public var simulatorRuntime: String?
    /// The model devicectl lists (`hardwareProperties.marketingName`, `iPad Pro 11-inch (M4)`): with
    /// no `udid`, the device is the one physical device whose model starts with it (the app's script
    /// finds its `ipadpro` so).
    public var model: String? = nil
    /// `watchdog: {after: 3, per_hour: 2}`: relaunched by the service that takes commands when the app
    /// is not running, or its dashboard not loaded, `after` intervals in a row (nil: never).
    public var watchdog: Watchdog? = nil
    public var location: SourceLocation

    /// The iOS major version (9 for 9.3.5).
    public var iosMajor: Int { Int(iosVersion.split(separator: ".").first ?? "") ?? 0 }
}

/// A device's watchdog (devices.yaml `watchdog:`): in `status --every … --publish --commands`, the
/// app is relaunched, as the Relaunch button does, when it is not running or its dashboard is not
/// loaded for `after` intervals in a row, at most `perHour` times in any hour.
public struct Watchdog: Sendable, Hashable, Codable {
    public var after: Int
    public var perHour: Int

    public init(after: Int, perHour: Int) {
        self.after = after
        self.perHour = perHour
    }
}

/// Defaults applied to every device that does not set the value itself.
public struct DeviceDefaults: Sendable, Hashable, Codable {
    public var kiosk: Bool?
    public var verificationTimeout: Double = 30
    public var dashboard: String?
    public var ddiDir: ConfigValue?
    public var timeouts: [String: Double] = [:]

    public init() {}
}

/// The whole devices.yaml.
public struct DeviceMatrix: Sendable, Hashable, Codable {
    public var file: String
    public var defaults: DeviceDefaults
    /// Flavours in file order.
    public var flavours: [Flavour]
    /// Devices in file order.
    public var devices: [Device]
    /// Named groups of device ids (`all` may be redefined here).
    public var groups: [String: [String]]
    /// A remote macOS builder (`ssh://mac-mini`).
    public var buildHost: ConfigValue?

    public func flavour(named name: String) -> Flavour? {
        flavours.first { $0.name == name }
    }

    public func device(id: String) -> Device? {
        devices.first { $0.id == id }
    }
}
