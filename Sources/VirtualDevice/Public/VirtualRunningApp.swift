/// The app currently in the foreground of a virtual device, as launched through debugserver.
///
/// Secrets in the arguments (the value after `-HAAccessToken`, or any flag naming a token or
/// password) never leave through `description` or JSON encoding: they become `***`.
public struct VirtualRunningApp: Sendable, Equatable, Codable, CustomStringConvertible {
    public let bundleIdentifier: String
    /// argv as the debugger sent it; argv[0] is the executable path.
    public let arguments: [String]
    /// Environment entries from `QEnvironmentHexEncoded` (`NAME=value`).
    public let environment: [String]
    /// What the app's screen shows right now.
    public let screen: VirtualScreen

    /// The arguments with secret values replaced by `***`.
    public var redactedArguments: [String] { Self.redact(arguments) }

    public var description: String {
        "\(bundleIdentifier) \(redactedArguments.dropFirst().joined(separator: " ")) — \(screen.title)"
    }

    static func redact(_ arguments: [String]) -> [String] {
        var result = arguments
        for index in arguments.indices.dropLast() {
            let flag = arguments[index].lowercased()
            if flag.hasPrefix("-")
                && (flag.contains("token") || flag.contains("password") || flag.contains("secret"))
            {
                result[index + 1] = "***"
            }
        }
        return result
    }

    private enum CodingKeys: String, CodingKey {
        case bundleIdentifier, arguments, environment, screen
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bundleIdentifier, forKey: .bundleIdentifier)
        try container.encode(redactedArguments, forKey: .arguments)
        try container.encode(environment, forKey: .environment)
        try container.encode(screen, forKey: .screen)
    }
}
