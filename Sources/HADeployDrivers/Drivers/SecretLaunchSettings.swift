import Foundation

/// Splits `-Key value` launch arguments into what may be on a command line and what may not.
///
/// A launch argument is visible to every local user in `/proc/PID/cmdline` (and `ps` on macOS) for
/// as long as the launching tool runs. The app reads the same keys from NSUserDefaults, so a secret
/// (the access token) travels another way: the app's preferences, stdin, or a library call.
struct SecretLaunchSettings: Sendable, Equatable {
    /// The arguments without any secret flag/value pair: safe for a command line.
    var publicArguments: [String]
    /// The secret pairs as NSUserDefaults keys (`HAAccessToken`), for the app's preferences.
    var secretDefaults: [String: String]

    init(arguments: [String], secrets: Set<String>) {
        var visible: [String] = []
        var hidden: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            if flag.hasPrefix("-"), flag.count > 1, index + 1 < arguments.count,
                secrets.contains(arguments[index + 1])
            {
                hidden[String(flag.dropFirst())] = arguments[index + 1]
                index += 2
                continue
            }
            visible.append(flag)
            index += 1
        }
        publicArguments = visible
        secretDefaults = hidden
    }
}
