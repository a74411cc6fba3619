import DeviceSpec
import HADeployCore

/// A secret named, never held: the plan says where it comes from (`env:HA_TOKEN`) and the run reads
/// it from its context's environment at the last moment. `plan --json` shows only the name.
public struct SecretReference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The environment variable holding the secret.
    public var variable: String

    public init(environment variable: String) { self.variable = variable }

    public var description: String { "env:\(variable)" }

    /// The secret, or nil when the variable is unset or empty.
    public func resolve(_ environment: [String: String]) -> Secret? {
        guard let value = environment[variable], !value.isEmpty else { return nil }
        return Secret(value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard text.hasPrefix("env:"), text.count > 4 else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a secret reference is env:NAME, not '\(text)'")
        }
        variable = String(text.dropFirst(4))
    }
}

/// A reference the run's environment does not resolve: the device stops before it is touched.
public struct UnresolvedSecret: Error, CustomStringConvertible {
    public var reference: SecretReference

    public init(reference: SecretReference) { self.reference = reference }

    public var description: String {
        "\(reference.variable) is not set (the plan names it as \(reference)): set it in the environment"
    }
}

/// What the app is told at launch, as one typed value. `settings` lists it as the app's NSUserDefaults
/// keys with typed values (`LaunchValue`); each form the devices take is rendered from that list, once:
/// argv (`LaunchArguments`: USB, simctl, devicectl, pymobiledevice3, the plan) and the app's preferences
/// (`ResolvedLaunch.preferences`: the jailbroken device, rosettasim, a `defaults import` domain).
public struct LaunchSettings: Sendable, Hashable, Codable {
    public enum Credentials: Sendable, Hashable, Codable {
        /// Nothing sent: the app keeps the server and token it has.
        case keep
        /// `--reset`: `-HAClearCredentials YES`.
        case clear
        /// `--demo`: `-HADemoMode YES`.
        case demo
        /// The Home Assistant server, and the token by reference.
        case homeAssistant(server: ConfigValue.Resolution, token: SecretReference)
    }

    public var credentials: Credentials
    public var dashboard: DashboardTarget
    /// nil: not sent (the device keeps its own kiosk setting).
    public var kiosk: Bool?
    /// `ha_integration: true`: the app registers its `mobile_app` entry.
    public var autoRegister: Bool
    /// devices.yaml's `app_settings:` (other keys the app reads), typed as the app reads them.
    public var appSettings: AppSettings
    /// Echoed back in `ha_dashboard_loaded` (`loaded_event: true`): this deploy and this device.
    public var deployID: String?
    public var deviceID: String?

    public init(
        credentials: Credentials, dashboard: DashboardTarget, kiosk: Bool?, autoRegister: Bool,
        appSettings: AppSettings, deployID: String?, deviceID: String?
    ) {
        self.credentials = credentials
        self.dashboard = dashboard
        self.kiosk = kiosk
        self.autoRegister = autoRegister
        self.appSettings = appSettings
        self.deployID = deployID
        self.deviceID = deviceID
    }

    /// The secrets these settings name.
    public var secrets: [SecretReference] {
        if case .homeAssistant(_, let token) = credentials { return [token] }
        return []
    }

    /// The app's NSUserDefaults keys and typed values, in the order the app is given them. With
    /// `environment`, the token is the real one (for the device only); without, it is `***` (or
    /// `<unset: KEY>`). `unset` names the variables the plan found unset (shown as `<unset: KEY>`).
    public func settings(environment: [String: String]? = nil, unset: Set<String> = []) -> [LaunchSetting] {
        var settings: [LaunchSetting] = []
        func add(_ key: String, _ value: LaunchValue) { settings.append(LaunchSetting(key, .value(value))) }
        switch credentials {
        case .keep: break
        case .clear: add("HAClearCredentials", .bool(true))
        case .demo: add("HADemoMode", .bool(true))
        case .homeAssistant(let server, let token):
            settings.append(LaunchSetting("HAServerURL", LaunchSetting.Value(server)))
            let value: ConfigValue.Resolution
            if let environment {
                value = token.resolve(environment).map { .value($0.reveal()) } ?? .unset([token.variable])
            } else {
                value = unset.contains(token.variable) ? .unset([token.variable]) : .value(Secret.redacted)
            }
            settings.append(LaunchSetting("HAAccessToken", LaunchSetting.Value(value), secret: true))
        }
        switch dashboard {
        case .named(let name): add("HADashboard", .string(name))
        case .appDefault: add("HADashboard", .string(""))
        case .unchanged: break
        }
        if let kiosk { add("HAKioskMode", .bool(kiosk)) }
        if autoRegister { add("HAAutoRegister", .bool(true)) }
        for (key, value) in appSettings.sorted { add(key, value) }
        if let deployID { add("HADeployID", .string(deployID)) }
        if let deviceID { add("HADeviceID", .string(deviceID)) }
        return settings
    }

    /// The app's launch arguments (`-Key value`, as NSUserDefaults reads them): `settings` in argv form.
    public func arguments(environment: [String: String]? = nil, unset: Set<String> = []) -> LaunchArguments {
        LaunchArguments(settings(environment: environment, unset: unset))
    }

    /// The settings with every secret resolved from `environment`, or the first one it lacks.
    public func resolved(_ environment: [String: String]) throws -> [LaunchSetting] {
        for reference in secrets where reference.resolve(environment) == nil {
            throw UnresolvedSecret(reference: reference)
        }
        return settings(environment: environment)
    }
}

/// One key the app is told at launch, with its typed value: what every form is rendered from.
public struct LaunchSetting: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case value(LaunchValue)
        /// Names of the variables that are not set: only in a plan shown before a run has them (a
        /// device with one never launches: the pipeline stops on `unsetKeys` first).
        case unset([String])

        init(_ resolution: ConfigValue.Resolution) {
            switch resolution {
            case .value(let text): self = .value(.string(text))
            case .unset(let names): self = .unset(names)
            }
        }

        /// The typed value; an unset one is the empty string, as in argv.
        public var resolved: LaunchValue {
            if case .value(let value) = self { return value }
            return .string("")
        }
    }

    /// The app's NSUserDefaults key (`HAKioskMode`); its launch argument is `-HAKioskMode`.
    public var key: String
    public var value: Value
    public var isSecret: Bool

    public init(_ key: String, _ value: Value, secret: Bool = false) {
        self.key = key
        self.value = value
        self.isSecret = secret
    }
}

/// One launch's settings with their secrets read: what a driver gets, and renders in its backend's
/// form — the app's arguments (USB, pymobiledevice3), arguments plus the secrets in the app's
/// preferences (simctl, devicectl), or the app's preferences alone (SSH, rosettasim, Mac).
public struct ResolvedLaunch: Sendable, Hashable, CustomStringConvertible {
    /// The app's keys and typed values in the order the app is given them, secrets marked.
    public var settings: [LaunchSetting]

    /// `settings` with the secrets it names read from `environment`; throws when one is not there.
    public init(_ settings: LaunchSettings, environment: [String: String]) throws {
        self.settings = try settings.resolved(environment)
    }

    /// The settings in argv form (`-Key value`), secrets marked.
    public var argumentList: LaunchArguments { LaunchArguments(settings) }

    /// The app's argv, secrets included: only for handing to the device (debugserver, a tool's stdin).
    public var arguments: [String] { argumentList.revealed() }

    /// The values that must be redacted wherever anything could be echoed.
    public var secretValues: Set<String> { argumentList.secretValues }

    /// The argv without the secret pairs: what may be on a command line (visible to every user).
    public var publicArguments: [String] { LaunchArguments(settings.filter { !$0.isSecret }).revealed() }

    /// Every setting as the app's preferences hold it (an argv `-Key value` lands in the same
    /// NSUserDefaults key): typed plist values, `HAKioskMode` a boolean, `HAThemeMode` an integer.
    public var preferences: [String: PropertyListValue] { Self.preferences(settings) }

    /// The secret settings alone in preferences form (`HAAccessToken`): for backends that keep them
    /// off a command line.
    public var secretPreferences: [String: PropertyListValue] {
        Self.preferences(settings.filter(\.isSecret))
    }

    static func preferences(_ settings: [LaunchSetting]) -> [String: PropertyListValue] {
        var result: [String: PropertyListValue] = [:]
        for setting in settings where !setting.key.isEmpty {
            result[setting.key] = setting.value.resolved.propertyListValue
        }
        return result
    }

    public var description: String { argumentList.description }
}
