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

/// What the app is told at launch, as one typed value. Each backend renders it in its own form:
/// arguments (USB, simctl, devicectl, pymobiledevice3) or the app's preferences (SSH, rosettasim, Mac).
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
    /// devices.yaml's `app_settings:` (other keys the app reads), sent as given.
    public var appSettings: [String: String]
    /// Echoed back in `ha_dashboard_loaded` (`loaded_event: true`): this deploy and this device.
    public var deployID: String?
    public var deviceID: String?

    public init(
        credentials: Credentials, dashboard: DashboardTarget, kiosk: Bool?, autoRegister: Bool,
        appSettings: [String: String], deployID: String?, deviceID: String?
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

    /// The app's launch arguments (`-Key value`, as NSUserDefaults reads them). With `environment`, the
    /// token is the real one (for the device only); without, it shows as `***` (or `<unset: KEY>`).
    /// `unset` names the variables the plan found unset (shown as `<unset: KEY>`).
    public func arguments(environment: [String: String]? = nil, unset: Set<String> = []) -> LaunchArguments {
        var arguments = LaunchArguments()
        switch credentials {
        case .keep: break
        case .clear: arguments.append("-HAClearCredentials", "YES")
        case .demo: arguments.append("-HADemoMode", "YES")
        case .homeAssistant(let server, let token):
            arguments.append("-HAServerURL", server)
            let value: ConfigValue.Resolution
            if let environment {
                value = token.resolve(environment).map { .value($0.reveal()) } ?? .unset([token.variable])
            } else {
                value = unset.contains(token.variable) ? .unset([token.variable]) : .value(Secret.redacted)
            }
            arguments.append("-HAAccessToken", value, secret: true)
        }
        switch dashboard {
        case .named(let name): arguments.append("-HADashboard", name)
        case .appDefault: arguments.append("-HADashboard", "")
        case .unchanged: break
        }
        if let kiosk { arguments.append("-HAKioskMode", kiosk ? "YES" : "NO") }
        if autoRegister { arguments.append("-HAAutoRegister", "YES") }
        for (key, value) in appSettings.sorted(by: { $0.key < $1.key }) {
            arguments.append("-" + key, value)
        }
        if let deployID { arguments.append("-HADeployID", deployID) }
        if let deviceID { arguments.append("-HADeviceID", deviceID) }
        return arguments
    }

    /// The arguments with every secret resolved from `environment`, or the first one it lacks.
    public func resolved(_ environment: [String: String]) throws -> LaunchArguments {
        for reference in secrets where reference.resolve(environment) == nil {
            throw UnresolvedSecret(reference: reference)
        }
        return arguments(environment: environment)
    }
}

/// One launch's settings with their secrets read: what a driver gets, and renders in its backend's
/// form — the app's arguments (USB, pymobiledevice3), arguments plus the secrets in the app's
/// preferences (simctl, devicectl), or the app's preferences alone (SSH, rosettasim, Mac).
public struct ResolvedLaunch: Sendable, Hashable, CustomStringConvertible {
    /// `-Key value` pairs in the order the app is given them, secrets marked.
    public var items: [LaunchArguments.Argument]

    /// `settings` with the secrets it names read from `environment`; throws when one is not there.
    public init(_ settings: LaunchSettings, environment: [String: String]) throws {
        items = try settings.resolved(environment).items
    }

    /// The app's argv, secrets included: only for handing to the device (debugserver, a tool's stdin).
    public var arguments: [String] { items.flatMap { [$0.flag, $0.value.value ?? ""] } }

    /// The values that must be redacted wherever anything could be echoed.
    public var secretValues: Set<String> {
        Set(items.filter(\.isSecret).compactMap(\.value.value).filter { !$0.isEmpty })
    }

    /// The argv without the secret pairs: what may be on a command line (visible to every user).
    public var publicArguments: [String] {
        items.filter { !$0.isSecret }.flatMap { [$0.flag, $0.value.value ?? ""] }
    }

    /// The secret pairs as the app's NSUserDefaults keys (`HAAccessToken`).
    public var secretDefaults: [String: String] { Self.defaults(items.filter(\.isSecret)) }

    /// Every pair as the app's NSUserDefaults key (an argv `-Key value` lands in the same key).
    public var defaults: [String: String] { Self.defaults(items) }

    static func defaults(_ items: [LaunchArguments.Argument]) -> [String: String] {
        var result: [String: String] = [:]
        for item in items where item.flag.hasPrefix("-") && item.flag.count > 1 {
            result[String(item.flag.dropFirst())] = item.value.value ?? ""
        }
        return result
    }

    public var description: String { LaunchArguments(items: items).description }
}
