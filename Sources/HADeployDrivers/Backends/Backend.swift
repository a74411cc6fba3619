import DeployModel
import DeviceSpec
import HADeployCore

/// One way hadeploy drives devices, in one place: which devices it takes on which host (`choose`),
/// the configuration the plan records (`configuration`), what its steps do (`wording`, `mounts`,
/// `screenshots`), its driver — which also answers `hadeploy status` (`DeviceDriver.facts`) — and what
/// a plan file may not choose in its configuration (`Configuration.visit`).
///
/// Adding a backend is a new type conforming to this and one line in `Backends.all`.
public protocol Backend: Sendable {
    associatedtype Configuration: Codable, Hashable, Sendable, PlanFileChecked

    /// The name plans and results use (`usb`, `ssh`, …).
    static var kind: String { get }

    /// The devices.yaml `transport:` words this backend takes, and what each means there (the loader
    /// checks devices.yaml against every backend's words). Two backends may take one word on
    /// different hosts (devicectl: the Mac's devicectl, pymobiledevice3 on Linux); they declare it alike.
    static var words: [TransportWord] { get }

    /// The twin `--virtual` gives a device of this backend (nil: none).
    static var twin: TwinKind? { get }

    /// Whether the backend reaches devices through usbmuxd and lockdownd: a usbmuxd lists them,
    /// `hadeploy pair` pairs them.
    static var throughUsbmuxd: Bool { get }

    /// The rollback the backend offers (`hadeploy rollback`), or nil.
    static var rollback: RollbackKind? { get }

    /// How this backend would drive `device` here (its usbmuxd, its lookup, whether this host can),
    /// or nil when the device is not this backend's. `Backends.all` is asked in order.
    static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice?

    /// Everything the driver is built from, resolved now: devices.yaml and `.env` read, secrets by name.
    /// `udid` and `host` are the device's as the run reaches it (a twin's when it has one).
    static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration

    /// The backend as a person reads it in a plan (`usb via the local usbmuxd`).
    static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String

    /// What the install, launch and other steps do, in words (the plan stores none: `PlanPrinter`).
    static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording

    /// Whether a device needs the mount step (the Developer Disk Image).
    static func mounts(_ device: Device) -> Bool

    /// Whether the backend can take a screenshot for the report.
    static var screenshots: Bool { get }

    /// How often a failed connect is retried (after re-probing the device).
    static var connectRetries: Int { get }

    /// The app build this backend installs.
    static var platform: AppPlatform { get }

    /// Whether installs take an unpacked .app bundle (an .ipa is unpacked once for them).
    static var takesBundle: Bool { get }

    /// The secrets the configuration names (read at the last moment from the run's environment).
    static func secrets(_ configuration: Configuration) -> [SecretReference]

    /// For `hadeploy devices`: what the backend still needs on this host to drive a connected device,
    /// in one line (nil: nothing to say).
    static func readiness(_ device: Device, udid: String, route: USBRoute?, host: BackendHostTools) async
        -> String?

    /// The device's driver, from its plan alone.
    static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry) throws
        -> any DeviceDriver
}

/// A backend known only at run time (the registry's entries): the backend's static functions, its
/// configuration read from a plan's settings.
public struct AnyBackend: Sendable {
    public let kind: String
    public let words: [TransportWord]
    public let twin: TwinKind?
    public let throughUsbmuxd: Bool
    public let rollback: RollbackKind?
    public let mounts: @Sendable (Device) -> Bool
    public let screenshots: Bool
    public let connectRetries: Int
    public let platform: AppPlatform
    public let takesBundle: Bool
    let choose: @Sendable (Device, BackendPlanning) -> BackendChoice?
    let settings: @Sendable (Device, BackendChoice, BackendPlanning, String?, String?) throws -> PlanValue
    let describe: @Sendable (PlannedBackend) throws -> String
    let wording: @Sendable (PlannedBackend) throws -> StepWording
    let secrets: @Sendable (PlannedBackend) throws -> [SecretReference]
    let driver: @Sendable (DevicePlan, DriverRegistry) throws -> any DeviceDriver
    let visit: @Sendable (inout PlanValue, inout PlanFileFields) -> Void
    public let readiness: @Sendable (Device, String, USBRoute?, BackendHostTools) async -> String?

    public init<B: Backend>(_ backend: B.Type) {
        @Sendable func read(_ planned: PlannedBackend) throws -> B.Configuration {
            try planned.settings.decode(B.Configuration.self)
        }
        kind = B.kind
        words = B.words
        twin = B.twin
        throughUsbmuxd = B.throughUsbmuxd
        rollback = B.rollback
        mounts = { B.mounts($0) }
        screenshots = B.screenshots
        connectRetries = B.connectRetries
        platform = B.platform
        takesBundle = B.takesBundle
        choose = { B.choose($0, $1) }
        settings = { try PlanValue(encoding: B.configuration($0, $1, $2, udid: $3, host: $4)) }
        describe = { B.describe(try read($0), $0) }
        wording = { B.wording(try read($0), $0) }
        secrets = { B.secrets(try read($0)) }
        driver = { plan, registry in
            let configuration: B.Configuration
            do {
                configuration = try read(plan.backend)
            } catch {
                throw TransportUnavailable(
                    device: plan.name, transport: B.kind,
                    reason: "the plan's settings are not the \(B.kind) backend's: make the plan again")
            }
            return try B.driver(configuration, plan: plan, registry: registry)
        }
        readiness = { await B.readiness($0, udid: $1, route: $2, host: $3) }
        visit = { settings, fields in fields.visit(B.Configuration.self, in: &settings) }
    }
}

extension Backend {
    /// Whether devices.yaml's `transport:` for `device` is one of this backend's words.
    public static func takes(_ device: Device) -> Bool {
        words.contains { $0.word == device.transport }
    }

    public static func mounts(_ device: Device) -> Bool { false }
    public static var twin: TwinKind? { nil }
    public static var throughUsbmuxd: Bool { false }
    public static var rollback: RollbackKind? { nil }
    public static var screenshots: Bool { true }
    public static var connectRetries: Int { PlanStep.maximumRetries }
    public static var platform: AppPlatform { .iOS }
    public static var takesBundle: Bool { false }
    public static func secrets(_ configuration: Configuration) -> [SecretReference] { [] }
    public static func readiness(_ device: Device, udid: String, route: USBRoute?, host: BackendHostTools)
        async
        -> String?
    { nil }
}

/// The twin a backend's devices get under `--virtual`.
public enum TwinKind: Sendable, Hashable {
    /// An in-process usbmuxd and lockdownd twin (iOS 9 → 26), reached as USB or Wi-Fi devices are.
    case lockdown
    /// A jailbroken iPad twin reached over SSH (its own sshd, a user namespace).
    case jailbroken
}

/// What `hadeploy rollback` puts back on a backend's devices.
public enum RollbackKind: Sendable, Hashable {
    /// The jailbroken iPad's backup of the app (on the device).
    case jailbroken
    /// The Mac app's backup (in ~/Applications).
    case mac
}

/// What `readiness` may use: this host's processes and files, and the run's variables.
public struct BackendHostTools: Sendable {
    public var variables: [String: String]
    public var runner: any ProcessRunner
    public var fileSystem: any FileSystem

    public init(variables: [String: String], runner: any ProcessRunner, fileSystem: any FileSystem) {
        self.variables = variables
        self.runner = runner
        self.fileSystem = fileSystem
    }
}

/// A backend's answer to "would you drive this device here?".
public struct BackendChoice: Sendable, Hashable {
    public var usbRoute: USBRoute?
    public var lookup: USBLookup
    public var availability: Availability

    public init(usbRoute: USBRoute? = nil, lookup: USBLookup = .usb, availability: Availability = .available)
    {
        self.usbRoute = usbRoute
        self.lookup = lookup
        self.availability = availability
    }

    /// Only on a Mac (`reason` elsewhere).
    static func macOnly(_ planning: BackendPlanning, reason: String) -> BackendChoice {
        BackendChoice(availability: planning.host == .macOS ? .available : .notOnThisHost(reason: reason))
    }
}

/// What a backend's steps do, in words, for the printed plan.
public struct StepWording: Sendable, Hashable {
    /// The connect step; nil: "connect over <the backend>".
    public var connect: String?
    /// The mount step, for devices that need one.
    public var mount: String?
    /// `{build}` stands for the build installed; " unless unchanged" is dropped under `--force`.
    public var install: String
    public var launch: String
    /// Where the app's log is read.
    public var appLog: String = "the app's log (Documents/ha-log.txt)"

    public init(
        connect: String? = nil, mount: String? = nil, install: String, launch: String,
        appLog: String = "the app's log (Documents/ha-log.txt)"
    ) {
        self.connect = connect
        self.mount = mount
        self.install = install
        self.launch = launch
        self.appLog = appLog
    }
}
