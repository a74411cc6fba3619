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
