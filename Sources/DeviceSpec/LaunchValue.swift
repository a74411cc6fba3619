import HADeployCore

/// One value the HA Dashboard app reads at launch through NSUserDefaults, typed as the app reads it:
/// the one typing rule for launch settings. Every form the devices take is rendered from it —
/// `argumentText` for argv (`-Key value`) and `propertyListValue` for the app's preferences plist and
/// a `defaults import` domain — so no backend turns text back into a value.
public enum LaunchValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case bool(Bool)
    case integer(Int)

    /// How the app reads a key (`stringForKey:`, `boolForKey:`, `integerForKey:`).
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        case string, bool, integer

        public var description: String {
            switch self {
            case .string: return "text"
            case .bool: return "YES or NO"
            case .integer: return "a whole number"
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .string: return .string
        case .bool: return .bool
        case .integer: return .integer
        }
    }

    /// The value as a launch argument's text, as NSUserDefaults reads argv: `YES`/`NO`, decimal digits,
    /// the text itself.
    public var argumentText: String {
        switch self {
        case .string(let text): return text
        case .bool(let flag): return flag ? "YES" : "NO"
        case .integer(let number): return String(number)
        }
    }

    /// The value in the app's preferences: a plist `<true/>`/`<false/>`, `<integer>`, `<string>` — what
    /// the app itself stores for the key (`setBool:forKey:`, `setInteger:forKey:`).
    public var propertyListValue: PropertyListValue {
        switch self {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .integer(let number): return .integer(Int64(number))
        }
    }

    public var description: String { argumentText }

    /// Keys the app reads as booleans or integers (github:ha-dashboard/ios-app, HAAppDelegate.m,
    /// HATheme.m, HALog.m, HADashboardViewController.m, HAAuthManager.m; 1.3 adds
    /// `HAShowUnsupportedCardsEnabled`, absent = YES). Every other key is read as text
    /// (`HAServerURL`, `HADashboard`: a dashboard named "2" is a name).
    public static let appKinds: [String: Kind] = [
        "HAKioskMode": .bool, "HADemoMode": .bool, "HAClearCredentials": .bool, "HAAutoRegister": .bool,
        "HAGradientEnabled": .bool, "HAPerfMonitorEnabled": .bool, "HADeveloperModeEnabled": .bool,
        "HABlurDisabled": .bool, "HACameraGlobalMute": .bool, "HAShowUnsupportedCardsEnabled": .bool,
        "HAThemeMode": .integer, "HAViewIndex": .integer, "HALogMinLevel": .integer,
    ]

    /// How the app reads `key`.
    public static func kind(ofAppKey key: String) -> Kind { appKinds[key] ?? .string }

    /// `text` (devices.yaml's `app_settings:`, a plan file) as the value the app reads for `key`; nil
    /// when the app reads the key as a boolean or number and `text` is not one (`HAThemeMode: dark`).
    /// Booleans are YES/NO, true/false or on/off in any case; numbers are decimal digits.
    public init?(appKey key: String, text: String) {
        switch Self.kind(ofAppKey: key) {
        case .string: self = .string(text)
        case .bool:
            switch text.lowercased() {
            case "yes", "true", "on": self = .bool(true)
            case "no", "false", "off": self = .bool(false)
            default: return nil
            }
        case .integer:
            let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(text)
            else { return nil }
            self = .integer(number)
        }
    }
}

/// devices.yaml's `app_settings:` (other keys the app reads at launch), each typed by
/// `LaunchValue(appKey:text:)`. Written (in a plan file) as the argument text, `{"HAThemeMode": "2"}`,
/// and read back through the same rule.
public struct AppSettings: Sendable, Hashable, Codable, ExpressibleByDictionaryLiteral {
    public var values: [String: LaunchValue]

    public init(_ values: [String: LaunchValue] = [:]) { self.values = values }

    public init(dictionaryLiteral elements: (String, LaunchValue)...) {
        values = Dictionary(elements) { _, last in last }
    }

    public var isEmpty: Bool { values.isEmpty }

    /// The settings in key order, as they are sent.
    public var sorted: [(key: String, value: LaunchValue)] { values.sorted { $0.key < $1.key } }

    public subscript(key: String) -> LaunchValue? {
        get { values[key] }
        set { values[key] = newValue }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values.mapValues(\.argumentText))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        var values: [String: LaunchValue] = [:]
        for (key, text) in try container.decode([String: String].self) {
            guard let value = LaunchValue(appKey: key, text: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription:
                        "app setting \(key) is read by the app as \(LaunchValue.kind(ofAppKey: key)), "
                        + "not '\(text)'")
            }
            values[key] = value
        }
        self.values = values
    }
}
