import DeviceSpec
import HADeployCore
import Versioning

/// Whether a device can be driven from this host at all.
public enum Availability: Sendable, Hashable, Encodable {
    case available
    case notOnThisHost(reason: String)

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .available: try container.encode("available")
        case .notOnThisHost(let reason): try container.encode("not available on this host: \(reason)")
        }
    }
}

/// One flavour's build, shared by every device that uses it.
public struct BuildPlan: Sendable, Hashable, Encodable {
    public var flavour: String
    public var xcode: String
    public var archs: [String]
    public var deploymentTarget: String
    public var sdk: String
    public var configuration: String
    public var devices: [String]
    /// false with --no-build: the devices use an existing artifact.
    public var enabled: Bool
    /// The remote builder (`build_host:`) when this host cannot run Xcode; nil builds here.
    public var buildHost: String?
    /// The exact commands the build runs, tools and environment resolved (secrets as *** when shown).
    public var commands: [ProcessCommand]

    public init(
        flavour: String, xcode: String, archs: [String], deploymentTarget: String, sdk: String,
        configuration: String, devices: [String], enabled: Bool, buildHost: String? = nil,
        commands: [ProcessCommand]
    ) {
        self.flavour = flavour
        self.xcode = xcode
        self.archs = archs
        self.deploymentTarget = deploymentTarget
        self.sdk = sdk
        self.configuration = configuration
        self.devices = devices
        self.enabled = enabled
        self.buildHost = buildHost
        self.commands = commands
    }
}

/// Which dashboard the app is told to open.
public enum DashboardTarget: Sendable, Hashable, Encodable, CustomStringConvertible {
    /// `-HADashboard <url_path>`.
    case named(String)
    /// `-HADashboard ""`: the app's default dashboard.
    case appDefault
    /// Nothing sent: the app keeps the dashboard it has.
    case unchanged

    /// The `url_path` the app should show (nil = the default dashboard), or nothing to check.
    public var expected: String?? {
        switch self {
        case .named(let name): return .some(name)
        case .appDefault: return .some(nil)
        case .unchanged: return .none
        }
    }

    public var description: String {
        switch self {
        case .named(let name): return name
        case .appDefault: return "(the app's default)"
        case .unchanged: return "(unchanged: the device's own)"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .named(let name): try container.encode(name)
        case .appDefault: try container.encode("")
        case .unchanged: try container.encodeNil()
        }
    }
}

/// How a device proves its dashboard loaded.
public struct VerificationPlan: Sendable, Hashable, Encodable {
    /// The app's own log (`Documents/ha-log.txt` in its data container).
    public var appLog: Bool
    /// The device's `mobile_app` entry in Home Assistant (`ha_integration: true`), found by this name
    /// (nil: the device's name as it reports it).
    public var homeAssistant: Bool
    public var homeAssistantDevice: String?
    /// The `ha_dashboard_loaded` event (`loaded_event: true`, app builds that send it).
    public var loadedEvent: Bool
    public var timeout: Double

    public init(
        appLog: Bool, homeAssistant: Bool, homeAssistantDevice: String? = nil, loadedEvent: Bool,
        timeout: Double
    ) {
        self.appLog = appLog
        self.homeAssistant = homeAssistant
        self.homeAssistantDevice = homeAssistantDevice
        self.loadedEvent = loadedEvent
        self.timeout = timeout
    }
}

/// Everything hadeploy will do for one device, resolved, as a value: the executor runs exactly this.
public struct DevicePlan: Sendable, Hashable, Encodable {
    public var id: String
    public var name: String
    public var kind: DeviceKind
    public var transport: TransportKind
    public var backend: DeviceBackend
    public var productType: String?
    public var ios: String
    public var arch: String
    public var flavour: String
    public var udid: ConfigValue.Resolution?
    /// The SSH host (jailbroken devices).
    public var host: ConfigValue.Resolution?
    /// nil: not sent (the device keeps its own kiosk setting).
    public var kiosk: Bool?
    public var dashboard: DashboardTarget
    public var verification: VerificationPlan
    /// Per-step deadline overrides in seconds, from devices.yaml (drivers size their commands by them).
    public var timeouts: [String: Double]
    public var launchArguments: LaunchArguments
    public var steps: [PlanStep]
    /// `.env` keys the device's steps need that are not set; a real deploy stops on them.
    public var unsetKeys: [String]
    public var availability: Availability

    public init(
        id: String, name: String, kind: DeviceKind, transport: TransportKind, backend: DeviceBackend,
        productType: String? = nil, ios: String, arch: String, flavour: String,
        udid: ConfigValue.Resolution? = nil, host: ConfigValue.Resolution? = nil, kiosk: Bool? = nil,
        dashboard: DashboardTarget, verification: VerificationPlan, timeouts: [String: Double],
        launchArguments: LaunchArguments, steps: [PlanStep], unsetKeys: [String], availability: Availability
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.transport = transport
        self.backend = backend
        self.productType = productType
        self.ios = ios
        self.arch = arch
        self.flavour = flavour
        self.udid = udid
        self.host = host
        self.kiosk = kiosk
        self.dashboard = dashboard
        self.verification = verification
        self.timeouts = timeouts
        self.launchArguments = launchArguments
        self.steps = steps
        self.unsetKeys = unsetKeys
        self.availability = availability
    }

    /// The step with this id, if the plan has it.
    public func step(_ id: StepID) -> PlanStep? { steps.first { $0.id == id } }
}

/// A whole deploy, as a value: `hadeploy plan` prints it, the executor runs it.
public struct DeployPlan: Sendable, Encodable {
    public var version: GitVersion
    public var deployID: String
    public var server: ConfigValue.Resolution
    /// The token the launch and the checks use (`--token`, else HA_TOKEN); shown as ***.
    public var accessToken: Secret?
    public var verify: Bool
    /// Why the dashboard check does not run (`verify` false): what every device's result says.
    public var verificationSkipped: String?
    public var builds: [BuildPlan]
    public var devices: [DevicePlan]
    public var warnings: [String]

    public init(
        version: GitVersion, deployID: String, server: ConfigValue.Resolution, accessToken: Secret? = nil,
        verify: Bool, verificationSkipped: String? = nil, builds: [BuildPlan], devices: [DevicePlan],
        warnings: [String]
    ) {
        self.version = version
        self.deployID = deployID
        self.server = server
        self.accessToken = accessToken
        self.verify = verify
        self.verificationSkipped = verificationSkipped
        self.builds = builds
        self.devices = devices
        self.warnings = warnings
    }
}
