import DeployModel
import Foundation
import HADeployCore

/// The launch settings where the app's NSUserDefaults reads them besides argv: its preferences. Both
/// forms take the typed values of `ResolvedLaunch.preferences` (`HAKioskMode` a boolean, `HAThemeMode`
/// an integer, a dashboard named "2" a string: `LaunchValue` types them, once), never argv text, and
/// keep the keys the app wrote itself.
enum LaunchPreferences {
    /// The app's preferences plist, `Library/Preferences/<bundle id>.plist` (the jailbroken device, a
    /// simulator's data container, the copy devicectl moves): `existing` (absent, empty or unreadable:
    /// then it starts afresh) with `values` set, as a binary plist (the format iOS's cfprefsd writes).
    static func plist(
        _ values: [String: PropertyListValue], mergedInto existing: Data?, removing managed: Set<String> = []
    ) throws -> Data {
        try merged(values, into: existing, removing: managed, format: .binary)
    }

    /// A preferences domain for `defaults import` (simctl's simulators, the Mac app), from what
    /// `defaults export` printed (a domain that could not be exported is empty): `values` set, the
    /// `managed` keys not sent removed, as an XML plist.
    static func defaultsDomain(
        _ values: [String: PropertyListValue], mergedInto exported: ProcessOutput,
        removing managed: Set<String> = []
    ) throws -> Data {
        try merged(
            values, into: exported.status == 0 ? exported.standardOutput : nil, removing: managed,
            format: .xml)
    }

    private static func merged(
        _ values: [String: PropertyListValue], into existing: Data?, removing managed: Set<String>,
        format: PropertyListValue.Format
    ) throws -> Data {
        var merged: [String: Any] = [:]
        if let existing, !existing.isEmpty,
            let parsed = try? PropertyListSerialization.propertyList(from: existing, format: nil)
                as? [String: Any]
        {
            merged = parsed
        }
        for key in managed where values[key] == nil { merged[key] = nil }
        for (key, value) in values { merged[key] = value }
        return try PropertyListValue.encode(merged, format)
    }
}
