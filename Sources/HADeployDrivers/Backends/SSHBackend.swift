import DeployModel
import DeviceSpec
import HADeployCore

/// A jailbroken device over SSH (libssh), as the app's old deploy script did it; with its USB entry as
/// the fallback when it may also be plugged in (`fallback_transport: usb`).
public enum SSHBackend: Backend {
    public static let kind = "ssh"
    public static let words = [TransportWord("ssh", drives: .device, needsHost: true)]
    public static let twin: TwinKind? = .jailbroken
    public static let rollback: RollbackKind? = .jailbroken

    public struct Configuration: Sendable, Hashable, Codable, PlanFileChecked {
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
        /// libimobiledevice's settings when the device may also be reached over USB (the plan's route).
        public var fallback: USBBackend.Configuration?

        public init(
            host: String, port: Int, user: String, login: SSHLoginPlan, knownHosts: String,
            legacyAlgorithms: Bool, commands: [String: String], workDirectory: String,
            fallback: USBBackend.Configuration? = nil
        ) {
            self.host = host
            self.port = port
            self.user = user
            self.login = login
            self.knownHosts = knownHosts
            self.legacyAlgorithms = legacyAlgorithms
            self.commands = commands
            self.workDirectory = workDirectory
            self.fallback = fallback
        }

        /// The `.env` key holding a `password_env:` password: that key, or the old scripts' spelling of
        /// it (`IPAD2_SSH_PASS` for `IPAD2_SSH_PASSWORD`, and the other way round) when that one is set.
        public static func passwordReference(_ key: String, in variables: [String: String])
            -> SecretReference?
        {
            var keys = [key]
            if key.hasSuffix("_PASSWORD") { keys.append(String(key.dropLast(4))) }
            if key.hasSuffix("_PASS") { keys.append(key + "WORD") }
            return keys.first { !(variables[$0] ?? "").isEmpty }.map(SecretReference.init(environment:))
        }

        public mutating func visit(_ fields: inout PlanFileFields) {
            fields.sshLogin(login, "login")
            fields.port(port, "port")
            fields.statePath(&workDirectory, "workDirectory")
            fields.nested(&fallback, "fallback")
        }
    }

    public static func choose(_ device: Device, _ planning: BackendPlanning) -> BackendChoice? {
        if let twins = planning.twins {
            return twins.jailbroken[device.id] == nil ? nil : BackendChoice()
        }
        guard takes(device) else { return nil }
        let udid = device.udid?.resolve(planning.variables).value
        // `fallback_transport: usb` when it is plugged in here: libimobiledevice through usbmuxd.
        let overUSB = USBBackend.words.contains { $0.word == device.fallbackTransport }
        let fallback = overUSB && udid != nil ? planning.route(device) : nil
        return BackendChoice(usbRoute: fallback)
    }

    /// A jailbroken device's login: its twin's when it has one (`--virtual`), else devices.yaml's —
    /// `password_env:`'s key (or the old scripts' spelling of it that is set), a key file, or the agent.
    public static func configuration(
        _ device: Device, _ choice: BackendChoice, _ planning: BackendPlanning, udid: String?, host: String?
    ) -> Configuration {
        let settings = device.ssh ?? SSHSettings()
        let work = planning.state + "/ssh"
        let fallback = choice.usbRoute == nil ? nil : planning.usb(device, udid: udid, lookup: .usb)
        if let twin = planning.twins?.jailbroken[device.id] {
            return Configuration(
                host: "127.0.0.1", port: twin.port, user: settings.user, login: .key(path: twin.key),
                knownHosts: twin.knownHosts, legacyAlgorithms: false, commands: settings.commands,
                workDirectory: work, fallback: fallback)
        }
        let variables = planning.variables
        let login: SSHLoginPlan
        if let key = settings.passwordEnv, let reference = Configuration.passwordReference(key, in: variables)
        {
            login = .password(reference)
        } else if let path = planning.nonEmpty(settings.key?.resolve(variables).value) {
            login = .key(path: HomePath.expand(path, variables))
        } else {
            login = .agent
        }
        return Configuration(
            host: host ?? "", port: settings.port, user: settings.user, login: login,
            knownHosts: SSHLogin.knownHostsPath(variables), legacyAlgorithms: settings.legacyAlgorithms,
            commands: settings.commands, workDirectory: work, fallback: fallback)
    }

    public static func describe(_ configuration: Configuration, _ planned: PlannedBackend) -> String {
        "ssh" + (planned.usbRoute.map { " (fallback: usb via \($0))" } ?? "")
    }

    public static func wording(_ configuration: Configuration, _ planned: PlannedBackend) -> StepWording {
        StepWording(
            install:
                "back up the installed app and its preferences on the device (a failed backup stops here), "
                + "send only the files that changed, ldid -S with the build's entitlements, swap {build} into "
                + "/Applications, stop the app by its path, uicache",
            launch:
                "restart cfprefsd, merge the launch settings into the app's preferences plist (token on stdin), "
                + "then open it")
    }

    public static var takesBundle: Bool { true }

    public static func secrets(_ configuration: Configuration) -> [SecretReference] {
        if case .password(let reference) = configuration.login { return [reference] }
        return []
    }

    public static func driver(_ configuration: Configuration, plan: DevicePlan, registry: DriverRegistry)
        throws
        -> any DeviceDriver
    {
        let primary = try registry.sshDriver(plan, configuration)
        guard let fallback = configuration.fallback else { return primary }
        return FallbackDriver(primary: primary, fallback: try registry.usbDriver(plan, fallback))
    }
}
