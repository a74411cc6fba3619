import Foundation
import HADeployCore

/// Hands launch arguments to an app that cannot receive them: writes `-Key value` pairs into the app's
/// preferences plist in its simulator data container, where NSUserDefaults reads them at startup
/// (an argv `-Key value` pair lands in the same NSUserDefaults key). Other keys in the file are kept.
struct LaunchDefaultsWriter: Sendable {
    /// `~/Library/Developer/CoreSimulator/Devices/<UDID>/data`.
    var simulatorData: URL
    var bundleID: String
    var fileSystem: any FileSystem

    /// The app's data container: the folder whose container-manager metadata names the bundle id.
    func dataContainer() -> URL? {
        let root = simulatorData.appendingPathComponent("Containers/Data/Application")
        let folders = ((try? fileSystem.contentsOfDirectory(atPath: root.path)) ?? []).map {
            root.appendingPathComponent($0)
        }
        for folder in folders.sorted(by: { $0.path < $1.path }) {
            let metadata = folder.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist")
            guard let data = fileSystem.contents(atPath: metadata.path),
                let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
                    as? [String: Any],
                plist["MCMMetadataIdentifier"] as? String == bundleID
            else { continue }
            return folder
        }
        return nil
    }

    /// Merges the launch settings (`ResolvedLaunch.preferences`) into
    /// `<container>/Library/Preferences/<bundle id>.plist`; returns the file.
    func write(_ preferences: [String: PropertyListValue], into container: URL) throws -> URL {
        let folder = container.appendingPathComponent("Library/Preferences")
        try fileSystem.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(bundleID).plist")
        let data = try LaunchPreferences.plist(
            preferences, mergedInto: fileSystem.contents(atPath: file.path))
        try fileSystem.write(data, to: file, options: .atomic)
        // It holds the access token: readable by this user only (the simulator runs as this user).
        try fileSystem.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return file
    }
}
