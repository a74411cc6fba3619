import Foundation
import HADeployCore

/// What a connected device told us about itself.
public struct ConnectedDevice: Sendable, Hashable, Codable {
    public var udid: String
    public var name: String
    public var productType: String?
    public var iosVersion: String
    public var arch: String?

    public init(udid: String, name: String, productType: String?, iosVersion: String, arch: String?) {
        self.udid = udid
        self.name = name
        self.productType = productType
        self.iosVersion = iosVersion
        self.arch = arch
    }
}

/// A built app ready to install: an `.ipa` or an `.app` directory.
public struct Artifact: Sendable, Hashable, Codable {
    public var path: String
    public var bundleID: String
    public var executable: String
    public var marketingVersion: String
    public var buildNumber: String
    public var flavour: String
    /// Slices of the main executable (armv7, arm64, x86_64...).
    public var archs: [String]
    /// `iOS` (devices and simulators) or `macCatalyst` (this Mac): an app runs on one only.
    public var platform: AppPlatform
    /// Info.plist's MinimumOSVersion: a device on an older iOS is refused before it is touched.
    public var minimumOSVersion: String?
    /// The `.app` unpacked from this `.ipa` for this run (by `ArtifactStaging`, before any device
    /// starts): what installs that take a bundle (SSH) send, the same for every device.
    public var bundlePath: String?
    /// Its provisioning profile (read when the artifact is inspected, never kept in records): a
    /// device it does not cover is refused before a byte is sent.
    public var provisioning: ProvisioningProfile?

    public init(
        path: String, bundleID: String, executable: String, marketingVersion: String, buildNumber: String,
        flavour: String, archs: [String], platform: AppPlatform = .iOS, minimumOSVersion: String? = nil
    ) {
        self.path = path
        self.bundleID = bundleID
        self.executable = executable
        self.marketingVersion = marketingVersion
        self.buildNumber = buildNumber
        self.flavour = flavour
        self.archs = archs
        self.platform = platform
        self.minimumOSVersion = minimumOSVersion
    }

    enum CodingKeys: String, CodingKey {
        case path, bundleID, executable, marketingVersion, buildNumber, flavour, archs, platform
        case minimumOSVersion
    }

    /// Build records written before Mac builds existed carry no platform: they are iOS builds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decode(String.self, forKey: .path)
        bundleID = try container.decode(String.self, forKey: .bundleID)
        executable = try container.decode(String.self, forKey: .executable)
        marketingVersion = try container.decode(String.self, forKey: .marketingVersion)
        buildNumber = try container.decode(String.self, forKey: .buildNumber)
        flavour = try container.decode(String.self, forKey: .flavour)
        archs = try container.decode([String].self, forKey: .archs)
        platform = try container.decodeIfPresent(AppPlatform.self, forKey: .platform) ?? .iOS
        minimumOSVersion = try container.decodeIfPresent(String.self, forKey: .minimumOSVersion)
    }
}

/// Upload/install progress.
public struct TransferProgress: Sendable, Hashable, Codable {
    public var bytesDone: Int64
    public var bytesTotal: Int64
    /// 0...100; install phases after the upload report their own percentage.
    public var percent: Int
    public var phase: String

    public init(bytesDone: Int64, bytesTotal: Int64, percent: Int, phase: String) {
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.percent = percent
        self.phase = phase
    }
}

public enum InstallOutcome: String, Sendable, Codable {
    case installed
    /// The device already had this bundle id, version, build and content hash.
    case unchanged
}

/// One transport's view of one device: the orchestrator drives every backend through this.
public protocol DeviceDriver: Sendable {
    /// Reaches the device and identifies it (re-run before a retry to re-probe).
    func connect() async throws -> ConnectedDevice
    /// Mounts what the developer services need (the Developer Disk Image), if anything.
    func prepare() async throws
    func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome
    /// Launches the app with `launch` rendered in this backend's form (arguments, preferences), replacing
    /// a running instance, and leaves it running.
    func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws
    /// Crash reports of the app's executable newer than `since`, copied into `directory`.
    func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL]
    /// A PNG of the screen.
    func screenshot() async throws -> Data
    /// A file in the app's data container (`Documents/ha-log.txt`), or nil when there is no such
    /// file. Throws ``AppDataUnavailable`` when this backend cannot read the container.
    func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data?
    /// What `hadeploy status` shows, read without installing, mounting or launching anything; a backend
    /// says what it cannot tell (the default: only reachability and the app's log).
    func facts(_ query: StatusQuery) async -> DeviceFacts
    /// What the driver has to say about the step it just ran, beyond its result (a tunnel rebuilt
    /// after a drop, a slower path taken and why), taken once: the pipeline adds it to the step's
    /// message. Nil when there is nothing.
    func takeStepNote() async -> String?
    /// Ends what the driver keeps for the run (a helper process): called once, after the device's
    /// last step, however it ended.
    func close() async
}

extension DeviceDriver {
    public func takeStepNote() async -> String? { nil }
    public func close() async {}

    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        throw AppDataUnavailable("\(type(of: self)) cannot read the app's data container")
    }
}

/// Errors a driver can mark as transient: worth a retry after re-probing the device.
public protocol TransientClassifying: Error {
    var isTransient: Bool { get }
}

/// Errors that mean "this host (or this device's iOS) cannot do that with the tools at hand", not
/// "the device failed": e.g. launching on iOS 17+ through libimobiledevice 1.3.0.
public protocol HostLimitationClassifying: Error {
    var isHostLimitation: Bool { get }
}

/// Errors that mean "the device is behind its passcode": iOS refused to mount or launch until it is
/// unlocked (debugserver's and SpringBoard's "not, or could not be, unlocked", devicectl's
/// `FBSOpenApplicationErrorDomain` 7 "Locked", the image mounter's `DeviceLocked`). After an install
/// the device ends "installed, not launched: locked" — not a success.
public protocol PairingClassifying: Error {
    /// The device no longer accepts this host's pair record (`InvalidHostID`: its trust was reset,
    /// or another host's pairing replaced the record): it must be paired again over USB.
    var isPairingLost: Bool { get }
}

public protocol DeviceLockClassifying: Error {
    var isDeviceLocked: Bool { get }
}
