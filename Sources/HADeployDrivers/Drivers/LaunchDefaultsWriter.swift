import Foundation
import HADeployCore

/// Hands launch arguments to an app that cannot receive them: writes `-Key value` pairs into the app's
/// preferences plist in its simulator data container, where NSUserDefaults reads them at startup
/// (an argv `-Key value` pair lands in the same NSUserDefaults key). Other keys in the file are kept.
struct LaunchDefaultsWriter: Sendable {
    /// `~/Library/Developer/CoreSimulator/Devices/<UDID>/data`.
    var simulatorData: URL
    var bundleID: String

    /// The app's data container: the folder whose container-manager metadata names the bundle id.
    func dataContainer() -> URL? {
        let root = simulatorData.appendingPathComponent("Containers/Data/Application")
        let folders =
            (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? []
        for folder in folders.sorted(by: { $0.path < $1.path }) {
            let metadata = folder.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist")
            guard let data = try? Data(contentsOf: metadata),
                let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
                    as? [String: Any],
                plist["MCMMetadataIdentifier"] as? String == bundleID
            else { continue }
            return folder
        }
        return nil
    }

    /// `["-HAServerURL", "http://ha:8123", "-HAKioskMode", "YES"]` → `HAServerURL`, `HAKioskMode`.
    static func defaults(from arguments: [String]) -> [String: String] {
        var result: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            let flag = arguments[index]
            if flag.hasPrefix("-"), flag.count > 1 {
                result[String(flag.dropFirst())] = arguments[index + 1]
                index += 2
            } else {
                index += 1
            }
        }
        return result
    }

    /// Merges the arguments into `<container>/Library/Preferences/<bundle id>.plist`; returns the file.
    func write(_ arguments: [String], into container: URL) throws -> URL {
        let folder = container.appendingPathComponent("Library/Preferences")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(bundleID).plist")
        var values: [String: Any] = [:]
        if let data = try? Data(contentsOf: file),
            let existing = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: Any]
        {
            values = existing
        }
        for (key, value) in Self.defaults(from: arguments) { values[key] = value }
        let data = try PropertyListValue.encode(values, .binary)
        try data.write(to: file, options: .atomic)
        // It holds the access token: readable by this user only (the simulator runs as this user).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return file
    }
}
