import Foundation

/// Whether this computer may talk to a device beyond its name and model.
public enum PairingState: String, Sendable, Codable {
    /// A pair record exists and the device accepted a session.
    case paired
    /// No pair record yet: the first connection will show "Trust this computer?".
    case notPaired
    /// The Trust dialog is up on the device, waiting for a tap.
    case trustPending
    /// The device is locked with a passcode.
    case passcodeLocked
    /// The user tapped "Don't Trust".
    case denied
    /// The device rejects this computer's pair record; pair again.
    case invalid
    /// The device did not say (it stopped answering, or answered something unexpected).
    case unknown
}

/// A device usbmuxd lists, with what lockdown tells before (or after) pairing.
public struct USBDeviceSummary: Sendable, Codable, Equatable {
    public let udid: String
    public let name: String?
    public let productType: String?
    public let productVersion: String?
    public let buildVersion: String?
    public let cpuArchitecture: String?
    /// "USB" or "Network".
    public let connection: String
    public let pairing: PairingState
    /// When pairing is not `paired`, or the device could not be asked: what to do (an instruction).
    public let problem: String?
    /// A Wi-Fi device hadeploy's usbmuxd lists: where it is, and how it was found (mDNS, an address).
    public var address: String? = nil
    public var foundBy: String? = nil
}

/// What a connected, paired device reports about itself (lockdown GetValue).
public struct USBDeviceInfo: Sendable, Codable, Equatable {
    public let identity: DeviceIdentity
    public let productType: String
    public let productVersion: IOSVersion
    public let buildVersion: String
    /// "armv7", "arm64", "arm64e".
    public let cpuArchitecture: String
    /// "iPad", "iPhone", "iPod".
    public let deviceClass: String
    public let hardwareModel: String
    /// iOS ≥ 16 only; nil when the device does not report it.
    public let developerModeEnabled: Bool?
}

/// Deadlines for each kind of step. Every C call runs under one of these.
public struct USBTimeouts: Sendable {
    /// usbmuxd requests and locating the device (usbmuxd itself gives up after ~5 s).
    public var usbmuxd: Duration = .seconds(10)
    /// lockdown connect + pair record + StartSession + TLS (lockdown waits 30 s per reply).
    public var handshake: Duration = .seconds(45)
    /// StartService and short service requests (lookup, browse, screenshot…).
    public var request: Duration = .seconds(45)
    /// One 1 MiB AFC write.
    public var uploadChunk: Duration = .seconds(45)
    /// installation_proxy Install/Upgrade/Uninstall, from command to Complete.
    public var install: Duration = .seconds(600)
    /// Upload and mount of a Developer Disk Image.
    public var developerImage: Duration = .seconds(300)
    /// The whole debugserver launch dialogue, settle time included.
    public var launch: Duration = .seconds(60)
    /// How long to wait for a device that disappeared (reboot, replug) to come back before a retry.
    public var reattach: Duration = .seconds(60)
    /// How long the lockdown session a device's earlier step kept may take to answer before the next
    /// step opens a new one instead: a device that dropped it answers at once (end of stream), one
    /// that stalls costs this much once.
    public var keptSession: Duration = .seconds(2)

    public init() {}

    /// The same deadline for every kind of step (tests).
    public static func uniform(_ duration: Duration) -> USBTimeouts {
        var timeouts = USBTimeouts()
        timeouts.usbmuxd = duration
        timeouts.handshake = duration
        timeouts.request = duration
        timeouts.uploadChunk = duration
        timeouts.install = duration
        timeouts.developerImage = duration
        timeouts.launch = duration
        timeouts.reattach = duration
        timeouts.keptSession = duration
        return timeouts
    }
}

/// Upload/install progress: bytes during the upload, the device's own percentage after it.
public struct USBInstallProgress: Sendable, Equatable {
    public enum Phase: String, Sendable {
        case uploading
        case installing
    }

    public let phase: Phase
    public let bytesDone: Int64
    public let bytesTotal: Int64
    /// 0...100 within the phase.
    public let percent: Int
    /// installation_proxy's status ("ExtractingPackage", "Complete"…), or "Uploading".
    public let status: String
}

public enum USBInstallOutcome: String, Sendable, Codable {
    case installed
    /// The device already had this bundle id at this version and build, with the same content hash.
    case skippedUnchanged
}

public enum USBUninstallOutcome: String, Sendable, Codable {
    case removed
    case wasNotInstalled
}

/// An app installed on the device, as installation_proxy lists it.
public struct USBInstalledApp: Sendable, Codable, Equatable {
    public let bundleIdentifier: String
    public let displayName: String?
    public let shortVersion: String?
    public let bundleVersion: String?
    public let executable: String?
    /// Device-side bundle path.
    public let path: String?
    /// Device-side data container (working directory of a launch).
    public let container: String?
}

/// The app hadeploy just launched (and detached from).
public struct USBLaunchedApp: Sendable, Equatable {
    public let bundleIdentifier: String
    /// The process name crash reports carry (CFBundleExecutable).
    public let executable: String
    public let processID: Int?
    /// Host clock when the launch was requested; use it as `since` for crash reports.
    public let launchedAt: Date
    /// Set when the app stopped or exited during the first moments (a crash at launch).
    public let earlyStop: GDBStopReply?
    /// What the app printed while hadeploy was attached (redacted).
    public let output: String
}

public enum DeveloperImageStatus: Sendable, Equatable {
    case alreadyMounted
    case mounted(DeveloperImage)
}
