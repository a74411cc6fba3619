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
    /// The exact commands, environment included (secrets as ***).
    public var commands: [ProcessCommand]
}

/// Everything hadeploy will do for one device, resolved, as a value.
public struct DevicePlan: Sendable, Hashable, Encodable {
    public var id: String
    public var name: String
    public var kind: DeviceKind
    public var transport: TransportKind
    public var fallbackTransport: TransportKind?
    public var productType: String?
    public var ios: String
    public var arch: String
    public var flavour: String
    /// The UDID or `<unset: KEY>`.
    public var udid: String?
    public var host: String?
    public var usbHost: String?
    public var kiosk: Bool
    /// nil = the app's default dashboard.
    public var dashboard: String?
    public var verificationTimeout: Double
    /// Per-step deadline overrides in seconds, from devices.yaml.
    public var timeouts: [String: Double]
    public var launchArguments: LaunchArguments
    public var steps: [String]
    /// `.env` keys the device's steps need that are not set; a real deploy stops on them.
    public var unsetKeys: [String]
    public var availability: Availability
}

/// A whole deploy, as a value: `hadeploy plan` prints it, the executor runs it.
public struct DeployPlan: Sendable, Encodable {
    public var version: GitVersion
    public var deployID: String
    public var server: String
    public var verify: Bool
    public var builds: [BuildPlan]
    public var devices: [DevicePlan]
    public var warnings: [String]
}
