import Foundation
import HADeployCore

/// Turns launch arguments into the app's preferences: `-Key value` → plist key `Key`, merged into what
/// the device already has, written back as a binary plist (the format iOS's `cfprefsd` writes).
///
/// The app reads these keys through NSUserDefaults, where a plist value and a launch argument are
/// equivalent; the types follow what it reads: `YES`/`NO` are booleans, digits are integers for the keys
/// it reads as integers, everything else a string (a dashboard named "2" stays a string).
enum PreferencesMerge {
    static let integerKeys: Set<String> = ["HAThemeMode", "HAViewIndex"]

    static func value(for key: String, _ text: String) -> Any {
        switch text {
        case "YES": return true
        case "NO": return false
        default:
            if integerKeys.contains(key), !text.isEmpty, text.allSatisfy(\.isASCII), let number = Int(text) {
                return number
            }
            return text
        }
    }

    /// `existing` (possibly empty or unreadable: then it starts afresh) with every argument applied.
    static func merged(existing: Data, arguments: [LaunchParameters.Argument]) throws -> Data {
        var dictionary: [String: Any] = [:]
        if !existing.isEmpty,
            let parsed = try? PropertyListSerialization.propertyList(from: existing, format: nil)
                as? [String: Any]
        {
            dictionary = parsed
        }
        for argument in arguments {
            let key = argument.flag.hasPrefix("-") ? String(argument.flag.dropFirst()) : argument.flag
            guard !key.isEmpty else { continue }
            dictionary[key] = value(for: key, argument.value)
        }
        return try PropertyListValue.encode(dictionary, .binary)
    }
}
