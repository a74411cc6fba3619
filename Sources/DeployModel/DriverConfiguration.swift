/// Everything a device's driver is built from, as values the planner resolved from devices.yaml,
/// `.env` and this host: the executor reads nothing else. Secrets appear only as references.
public enum DriverConfiguration: Sendable, Hashable, Codable {
    case usb(USBConfiguration)
    /// A jailbroken device; `fallback` when it may also be reached over USB.
    case ssh(SSHConfiguration, fallback: USBConfiguration?)
    case simctl(SimulatorConfiguration)
    case rosettaSim(SimulatorConfiguration)
    case devicectl(DevicectlConfiguration)
    /// iOS 17+ from Linux: install over usbmuxd, the rest through pymobiledevice3.
    case pymobiledevice3(PyMobileDevice3Configuration, usb: USBConfiguration)
    case mac(MacConfiguration)
    /// Not driven from this host (see the device's availability).
    case none
}

/// libimobiledevice through a usbmuxd (the route is the device's backend).
public struct USBConfiguration: Sendable, Hashable, Codable {
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
}

/// How hadeploy logs in over SSH: a password or a key by reference, or the ssh-agent.
public enum SSHLoginPlan: Sendable, Hashable, Codable {
    /// `password_env:` — the password is read from the environment at the last moment.
    case password(SecretReference)
    /// A private key file; the ssh-agent when the file is not there at run time.
    case key(path: String)
    /// The ssh-agent of the run (`SSH_AUTH_SOCK` of its environment).
    case agent
}

public struct SSHConfiguration: Sendable, Hashable, Codable {
    public var host: String
    public var port: Int
    public var user: String
    public var login: SSHLoginPlan
    /// hadeploy's known_hosts (a twin's own for jailbroken twins).
    public var knownHosts: String
    public var legacyAlgorithms: Bool
    /// devices.yaml's `ssh: commands:` overrides.
    public var commands: [String: String]
    /// Where bundles are staged on this machine.
    public var workDirectory: String

    /// The `.env` key holding a `password_env:` password: that key, or the old scripts' spelling of it
    /// (`IPAD2_SSH_PASS` for `IPAD2_SSH_PASSWORD`, and the other way round) when that one is set.
    public static func passwordReference(_ key: String, in variables: [String: String]) -> SecretReference? {
        var keys = [key]
        if key.hasSuffix("_PASSWORD") { keys.append(String(key.dropLast(4))) }
        if key.hasSuffix("_PASS") { keys.append(key + "WORD") }
        return keys.first { !(variables[$0] ?? "").isEmpty }.map(SecretReference.init(environment:))
    }

    public init(
        host: String, port: Int, user: String, login: SSHLoginPlan, knownHosts: String,
        legacyAlgorithms: Bool,
        commands: [String: String], workDirectory: String
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.login = login
        self.knownHosts = knownHosts
        self.legacyAlgorithms = legacyAlgorithms
        self.commands = commands
        self.workDirectory = workDirectory
    }
}

/// A simulator (simctl, rosettasim-ctl): which one, and where its tools and files are.
public struct SimulatorConfiguration: Sendable, Hashable, Codable {
    public var udid: String?
    public var deviceType: String?
    public var runtime: String
    /// `DEVELOPER_DIR` for the flavour's Xcode (simctl).
    public var developerDir: String?
    /// `rosettasim-ctl` when `ROSETTASIM_CTL` was set when planning (a name: the run resolves it from
    /// its own `ROSETTASIM_CTL`, `PlanTools`); nil: not installed.
    public var tool: String?
    /// The user's home folder: crash reports and the simulators' data live under it.
    public var home: String
    public var scratchDirectory: String

    public init(
        udid: String?, deviceType: String?, runtime: String, developerDir: String?, tool: String?,
        home: String,
        scratchDirectory: String
    ) {
        self.udid = udid
        self.deviceType = deviceType
        self.runtime = runtime
        self.developerDir = developerDir
        self.tool = tool
        self.home = home
        self.scratchDirectory = scratchDirectory
    }
}

public struct DevicectlConfiguration: Sendable, Hashable, Codable {
    /// The UDID, CoreDevice identifier or name passed to `--device`.
    public var device: String
    public var developerDir: String?
    public var scratchDirectory: String

    public init(device: String, developerDir: String?, scratchDirectory: String) {
        self.device = device
        self.developerDir = developerDir
        self.scratchDirectory = scratchDirectory
    }
}

public struct PyMobileDevice3Configuration: Sendable, Hashable, Codable {
    /// `pymobiledevice3`: a name, resolved by the run (`PlanTools`: `PYMOBILEDEVICE3` of its environment,
    /// the working folder's `.venv-pmd3`, or PATH). A plan file may name no other.
    public var executable: String
    public var scratchDirectory: String

    public init(executable: String, scratchDirectory: String) {
        self.executable = executable
        self.scratchDirectory = scratchDirectory
    }
}

public struct MacConfiguration: Sendable, Hashable, Codable {
    /// The user's home folder: the app's preferences, Documents and hadeploy's installed copy.
    public var home: String

    public init(home: String) { self.home = home }
}
