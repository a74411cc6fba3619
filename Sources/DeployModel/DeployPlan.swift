import DeviceSpec
import HADeployCore
import Versioning

/// Whether a device can be driven from this host at all.
public enum Availability: Sendable, Hashable, Codable {
    case available
    /// This kind of host cannot drive it at all (a simulator on Linux): skipped, not a failure.
    case notOnThisHost(reason: String)
    /// This host should drive it and cannot now (its twin refused to start, for a reason of this
    /// host's): a failure, with its reason, never a quiet skip.
    case failedHere(reason: String)

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .available: try container.encode("available")
        case .notOnThisHost(let reason): try container.encode("\(Self.prefix)\(reason)")
        case .failedHere(let reason): try container.encode("\(Self.failedPrefix)\(reason)")
        }
    }

    static let prefix = "not available on this host: "
    static let failedPrefix = "failed on this host: "

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if text.hasPrefix(Self.prefix) {
            self = .notOnThisHost(reason: String(text.dropFirst(Self.prefix.count)))
        } else if text.hasPrefix(Self.failedPrefix) {
            self = .failedHere(reason: String(text.dropFirst(Self.failedPrefix.count)))
        } else {
            self = .available
        }
    }
}

/// One flavour's build, shared by every device that uses it.
public struct BuildPlan: Sendable, Hashable, Codable {
    public var flavour: String
    public var xcode: String
    public var archs: [String]
    public var deploymentTarget: String
    public var sdk: String
    public var configuration: String
    public var devices: [String]
    /// false with --no-build: the devices use an existing artifact.
    public var enabled: Bool
    /// Where it builds, decided once by the planner: the build runs there and nowhere else.
    public var location: BuildLocation
    /// The exact commands the build runs, tools and environment resolved (secrets as *** when shown).
    public var commands: [ProcessCommand]
    /// false when every device of the flavour lacks a setting it needs (`unsetKeys`): a deploy does not
    /// build it (no device could take it); `hadeploy build` still does.
    public var deployable: Bool

    public init(
        flavour: String, xcode: String, archs: [String], deploymentTarget: String, sdk: String,
        configuration: String, devices: [String], enabled: Bool, location: BuildLocation = .here,
        commands: [ProcessCommand], deployable: Bool = true
    ) {
        self.flavour = flavour
        self.xcode = xcode
        self.archs = archs
        self.deploymentTarget = deploymentTarget
        self.sdk = sdk
        self.configuration = configuration
        self.devices = devices
        self.enabled = enabled
        self.location = location
        self.commands = commands
        self.deployable = deployable
    }
}

/// Where a flavour builds. In JSON: `"here"`, `"nowhere"` or the build host's address.
public enum BuildLocation: Sendable, Hashable, Codable {
    /// This machine: macOS with the flavour's Xcode, or the xcodebuild HADEPLOY_XCODEBUILD names.
    case here
    /// devices.yaml's `build_host:` (`ssh://…`), resolved.
    case buildHost(String)
    /// This machine cannot run the flavour's Xcode and devices.yaml names no build host.
    case nowhere

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        switch text {
        case "here": self = .here
        case "nowhere": self = .nowhere
        default: self = .buildHost(text)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .here: try container.encode("here")
        case .buildHost(let address): try container.encode(address)
        case .nowhere: try container.encode("nowhere")
        }
    }
}

/// Which dashboard the app is told to open.
public enum DashboardTarget: Sendable, Hashable, Codable, CustomStringConvertible {
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

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .unchanged
        } else {
            let name = try container.decode(String.self)
            self = name.isEmpty ? .appDefault : .named(name)
        }
    }
}

/// How a device proves its dashboard loaded.
public struct VerificationPlan: Sendable, Hashable, Codable {
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
public struct DevicePlan: Sendable, Hashable, Codable {
    public var id: String
    public var name: String
    public var kind: DeviceKind
    public var transport: Transport
    /// How the device is driven, and everything its driver is built from (`Backends` in HADeployDrivers).
    public var backend: PlannedBackend
    public var productType: String?
    public var ios: String
    public var arch: String
    public var flavour: String
    public var udid: ConfigValue.Resolution?
    /// The SSH host (jailbroken devices).
    public var host: ConfigValue.Resolution?
    /// nil: not sent (the device keeps its own kiosk setting). The launch settings' own, kept once.
    public var kiosk: Bool? { launch.kiosk }
    /// The dashboard the app is told to show (the launch settings' own).
    public var dashboard: DashboardTarget { launch.dashboard }
    public var verification: VerificationPlan
    /// Per-step deadline overrides in seconds, from devices.yaml (drivers size their commands by them).
    public var timeouts: [String: Double]
    /// What the app is told at launch (the token by reference).
    public var launch: LaunchSettings
    /// `--force`: installed even when the device already has this exact build.
    public var force: Bool
    public var steps: [PlanStep]
    /// `.env` keys the device's steps need that are not set; a real deploy stops on them.
    public var unsetKeys: [String]
    public var availability: Availability

    /// The step with this id, if the plan has it.
    public func step(_ id: StepID) -> PlanStep? { steps.first { $0.id == id } }

    /// The launch arguments as people see them: the token as `***` (or `<unset: KEY>`).
    public var launchArguments: LaunchArguments { launch.arguments(unset: Set(unsetKeys)) }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, transport, backend, productType, ios, arch, flavour, udid, host
        case verification, timeouts, launch, force, steps, unsetKeys, availability
        /// Written for people and tools reading the plan; read back from `launch`.
        case launchArguments
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encode(transport, forKey: .transport)
        try container.encode(backend, forKey: .backend)
        try container.encodeIfPresent(productType, forKey: .productType)
        try container.encode(ios, forKey: .ios)
        try container.encode(arch, forKey: .arch)
        try container.encode(flavour, forKey: .flavour)
        try container.encodeIfPresent(udid, forKey: .udid)
        try container.encodeIfPresent(host, forKey: .host)
        try container.encode(verification, forKey: .verification)
        try container.encode(timeouts, forKey: .timeouts)
        try container.encode(launch, forKey: .launch)
        try container.encode(launchArguments, forKey: .launchArguments)
        try container.encode(force, forKey: .force)
        try container.encode(steps, forKey: .steps)
        try container.encode(unsetKeys, forKey: .unsetKeys)
        try container.encode(availability, forKey: .availability)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        kind = try container.decode(DeviceKind.self, forKey: .kind)
        transport = try container.decode(Transport.self, forKey: .transport)
        backend = try container.decode(PlannedBackend.self, forKey: .backend)
        productType = try container.decodeIfPresent(String.self, forKey: .productType)
        ios = try container.decode(String.self, forKey: .ios)
        arch = try container.decode(String.self, forKey: .arch)
        flavour = try container.decode(String.self, forKey: .flavour)
        udid = try container.decodeIfPresent(ConfigValue.Resolution.self, forKey: .udid)
        host = try container.decodeIfPresent(ConfigValue.Resolution.self, forKey: .host)
        verification = try container.decode(VerificationPlan.self, forKey: .verification)
        timeouts = try container.decode([String: Double].self, forKey: .timeouts)
        launch = try container.decode(LaunchSettings.self, forKey: .launch)
        force = try container.decode(Bool.self, forKey: .force)
        steps = try container.decode([PlanStep].self, forKey: .steps)
        unsetKeys = try container.decode([String].self, forKey: .unsetKeys)
        availability = try container.decode(Availability.self, forKey: .availability)
    }

    public init(
        id: String, name: String, kind: DeviceKind, transport: Transport, backend: PlannedBackend,
        productType: String? = nil, ios: String, arch: String, flavour: String,
        udid: ConfigValue.Resolution? = nil, host: ConfigValue.Resolution? = nil,
        verification: VerificationPlan, timeouts: [String: Double],
        launch: LaunchSettings, force: Bool = false,
        steps: [PlanStep], unsetKeys: [String], availability: Availability
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
        self.verification = verification
        self.timeouts = timeouts
        self.launch = launch
        self.force = force
        self.steps = steps
        self.unsetKeys = unsetKeys
        self.availability = availability
    }
}

/// A built app the plan installs, named by path and content hash (checked before any device).
public struct PlannedArtifact: Sendable, Hashable, Codable {
    public var path: String
    /// SHA-256 of the .ipa, or of an .app folder's files (see `ArtifactDigest`).
    public var sha256: String

    public init(path: String, sha256: String) {
        self.path = path
        self.sha256 = sha256
    }
}

/// Where each flavour's app comes from, decided when planning.
public enum ArtifactPlan: Sendable, Hashable, Codable {
    /// Built from this checkout (the plan's builds).
    case build
    /// Existing builds (`--artifact`, `--artifacts`), by flavour.
    case files([String: PlannedArtifact])
    /// Demo bundles generated for virtual twins, in this folder.
    case demo(directory: String, bundleID: String)
    /// `--no-build` with nothing to install.
    case nothing
}

/// How hadeploy logs in to a USB host (`usb_host: ssh://…`) to forward its usbmuxd.
public struct HostLogin: Sendable, Hashable, Codable {
    public var login: SSHLoginPlan
    public var knownHosts: String

    public init(login: SSHLoginPlan, knownHosts: String) {
        self.login = login
        self.knownHosts = knownHosts
    }
}

/// A whole deploy, as a value: `hadeploy plan` prints it, the executor runs it, and a plan file
/// (`hadeploy plan --json > plan.json`) holds all of it: `hadeploy deploy --plan plan.json` runs it.
public struct DeployPlan: Sendable, Codable {
    /// The plan file format this hadeploy reads and writes (2: each build says where it builds,
    /// `location`, instead of a `buildHost` that the build could overrule; 4: a device's kiosk and
    /// dashboard only in its launch settings, where the drivers read them).
    public static let currentFormat = 4

    /// `format` of the file; a plan of another format is refused.
    public var format: Int = DeployPlan.currentFormat
    /// The project the plan was made for (`ProjectFingerprint`): devices.yaml, which `.env` keys are set,
    /// the version and the artifacts. A plan made for another one is refused.
    public var project: String = ""
    public var version: GitVersion
    public var deployID: String
    public var server: ConfigValue.Resolution
    /// The token the launch and the checks use, by reference (`env:HA_TOKEN`; `--token` is handed on
    /// as HA_TOKEN); nil when it is not set.
    public var accessToken: SecretReference?
    /// `HA_CA_FILE`: the CA that signs the Home Assistant server's certificate.
    public var caFile: String?
    /// The dashboards the Home Assistant preflight checks before any device (nil: the default one);
    /// empty when nothing is checked.
    public var preflight: [String?] = []
    /// Where each flavour's app comes from.
    public var artifacts: ArtifactPlan = .build
    /// hadeploy's state folder (`--state`): staging, locks' records, demo bundles.
    public var stateDirectory: String = ".hadeploy"
    /// How a USB host's usbmuxd is reached over SSH, when a device has one.
    public var usbHostLogin: HostLogin?
    public var verify: Bool
    /// Why the dashboard check does not run (`verify` false): what every device's result says.
    public var verificationSkipped: String?
    public var builds: [BuildPlan]
    public var devices: [DevicePlan]
    public var warnings: [String]
    /// `hmac-sha256:<hex>` over the plan's canonical bytes, when `plan --json` ran with
    /// `HADEPLOY_PLAN_KEY` set (`PlanSignature`); nil: unsigned.
    public var signature: String?

    public init(
        version: GitVersion, deployID: String, server: ConfigValue.Resolution,
        accessToken: SecretReference? = nil,
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
