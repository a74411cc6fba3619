import Foundation
import HADeployCore

/// A fact a backend knows, or why it cannot tell.
public enum Fact<Value: Sendable & Encodable & Equatable>: Sendable, Equatable, Encodable {
    case known(Value)
    case unavailable(String)

    public var value: Value? {
        if case .known(let value) = self { return value }
        return nil
    }

    public var reason: String? {
        if case .unavailable(let reason) = self { return reason }
        return nil
    }

    /// `{"value": …}` or `{"unavailable": "why"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .known(let value): try container.encode(value, forKey: .value)
        case .unavailable(let reason): try container.encode(reason, forKey: .unavailable)
        }
    }

    enum Keys: String, CodingKey { case value, unavailable }
}

/// What a status check asks a driver about one device and its app.
public struct StatusQuery: Sendable, Hashable {
    /// nil: hadeploy does not know which app (no artifact, no record, no BUNDLE_ID).
    public var bundleID: String?
    /// The app's process name (CFBundleExecutable), when known.
    public var executable: String?
    /// Where the app keeps its log in its data container.
    public static let appLogPath = "Documents/ha-log.txt"

    /// The backend's name in "not available from …" answers.
    public var backend: String

    public init(bundleID: String?, executable: String?, backend: String) {
        self.bundleID = bundleID
        self.executable = executable
        self.backend = backend
    }

    /// What a backend that cannot answer says.
    public func notFromThisBackend(_ what: String) -> String {
        "\(what): not available from the \(backend) backend"
    }
}

/// The installed app's CFBundleShortVersionString and CFBundleVersion.
public struct InstalledBuild: Sendable, Hashable, Codable {
    public var marketingVersion: String
    public var buildNumber: String

    public init(marketingVersion: String, buildNumber: String) {
        self.marketingVersion = marketingVersion
        self.buildNumber = buildNumber
    }

    public var description: String { "\(marketingVersion) (\(buildNumber))" }
}

public struct BatteryState: Sendable, Hashable, Codable {
    /// 0...100.
    public var level: Int
    public var charging: Bool
    /// On a charger or a powered cable (ExternalConnected); nil when the device did not say.
    public var externalPower: Bool?

    public init(level: Int, charging: Bool, externalPower: Bool?) {
        self.level = level
        self.charging = charging
        self.externalPower = externalPower
    }
}

public struct StorageState: Sendable, Hashable, Codable {
    public var availableBytes: Int64
    public var capacityBytes: Int64?

    public init(availableBytes: Int64, capacityBytes: Int64?) {
        self.availableBytes = availableBytes
        self.capacityBytes = capacityBytes
    }
}

/// The provisioning profile the installed build runs under, as the device has it installed
/// (misagent): the one for the app's id that lists the device, the latest to expire.
public struct ProfileState: Sendable, Hashable, Codable {
    public var name: String
    public var uuid: String
    public var expires: Date?

    public init(name: String, uuid: String, expires: Date?) {
        self.name = name
        self.uuid = uuid
        self.expires = expires
    }

    /// The profile for `bundleID` on the device `udid` among `installed`, the latest to expire.
    public static func covering(bundleID: String, udid: String, in installed: [ProvisioningProfile])
        -> ProfileState?
    {
        installed.filter { profile in
            profile.applicationIdentifier.map { ProvisioningProfile.matches($0, bundleID: bundleID) } ?? false
                && (profile.provisionsAllDevices
                    || (profile.provisionedDevices ?? []).contains {
                        $0.caseInsensitiveCompare(udid) == .orderedSame
                    })
        }
        .max { ($0.expirationDate ?? .distantFuture) < ($1.expirationDate ?? .distantFuture) }
        .map { ProfileState(name: $0.name, uuid: $0.uuid, expires: $0.expirationDate) }
    }
}

/// What tells a reboot apart: a boot time, a boot session id, or the Developer Disk Image a deploy
/// mounted (it does not survive a reboot), whichever the backend has.
public struct BootState: Sendable, Hashable, Codable {
    public var bootedAt: Date?
    public var bootSessionUUID: String?
    public var developerImageMounted: Bool?

    public init(bootedAt: Date? = nil, bootSessionUUID: String? = nil, developerImageMounted: Bool? = nil) {
        self.bootedAt = bootedAt
        self.bootSessionUUID = bootSessionUUID
        self.developerImageMounted = developerImageMounted
    }
}

/// One backend's answers about one device, read without installing, mounting or launching anything.
public struct DeviceFacts: Sendable {
    /// nil with `unreachable` set when the device could not be reached.
    public var device: ConnectedDevice?
    public var unreachable: String?
    /// `.known(nil)`: the app is not installed.
    public var installed: Fact<InstalledBuild?>
    public var running: Fact<Bool>
    /// The app's `Documents/ha-log.txt`; `.known(nil)` when there is none.
    public var appLog: Fact<Data?>
    public var battery: Fact<BatteryState>
    public var storage: Fact<StorageState>
    public var boot: Fact<BootState>
    /// The installed build's provisioning profile; `.known(nil)`: none on the device covers it.
    public var profile: Fact<ProfileState?>

    public init(
        device: ConnectedDevice?, unreachable: String? = nil, installed: Fact<InstalledBuild?>,
        running: Fact<Bool>, appLog: Fact<Data?>, battery: Fact<BatteryState>, storage: Fact<StorageState>,
        boot: Fact<BootState>,
        profile: Fact<ProfileState?> = .unavailable("the installed profiles: not read by this backend")
    ) {
        self.profile = profile
        self.device = device
        self.unreachable = unreachable
        self.installed = installed
        self.running = running
        self.appLog = appLog
        self.battery = battery
        self.storage = storage
        self.boot = boot
    }

    /// A device that did not answer: nothing else is known.
    public static func unreachable(_ reason: String) -> DeviceFacts {
        let unknown = "the device was not reached"
        return DeviceFacts(
            device: nil, unreachable: reason, installed: .unavailable(unknown),
            running: .unavailable(unknown),
            appLog: .unavailable(unknown), battery: .unavailable(unknown), storage: .unavailable(unknown),
            boot: .unavailable(unknown))
    }
}

extension DeviceDriver {
    /// What any backend can answer: whether the device is reached (``connect()``) and the app's log
    /// where the backend reads its data container; the rest "not available from this backend".
    public func facts(_ query: StatusQuery) async -> DeviceFacts {
        let device: ConnectedDevice
        do {
            device = try await connect()
        } catch {
            return .unreachable(SystemErrorText.message(error))
        }
        return DeviceFacts(
            device: device, installed: .unavailable(query.notFromThisBackend("the installed build")),
            running: .unavailable(query.notFromThisBackend("whether the app runs")),
            appLog: await appLog(query),
            battery: .unavailable(query.notFromThisBackend("battery")),
            storage: .unavailable(query.notFromThisBackend("free storage")),
            boot: .unavailable(query.notFromThisBackend("boot time")))
    }

    /// The app's log through ``appDataFile(_:relativePath:)``, or why it cannot be read.
    public func appLog(_ query: StatusQuery) async -> Fact<Data?> {
        guard let bundleID = query.bundleID else {
            return .unavailable("which app is unknown: deploy once, or set BUNDLE_ID")
        }
        let artifact = Artifact(
            path: "", bundleID: bundleID, executable: query.executable ?? "", marketingVersion: "",
            buildNumber: "", flavour: "", archs: [])
        do {
            return .known(try await appDataFile(artifact, relativePath: StatusQuery.appLogPath))
        } catch let error as AppDataUnavailable {
            return .unavailable("the app's log: \(error)")
        } catch {
            return .unavailable("the app's log could not be read: \(SystemErrorText.message(error))")
        }
    }
}
