import Foundation
import HADeployCore
import MobileDevice

/// Where the Mac Catalyst app lives on this Mac: hadeploy's installed copy (and the one it
/// replaced), the app's preferences domain and its data folder.
///
/// Before 1.3 the app's Mac build was not sandboxed: NSUserDefaults reads
/// `~/Library/Preferences/<bundle id>.plist` (the `defaults` domain `<bundle id>`) and
/// `NSDocumentDirectory` is `~/Documents`, where HALog writes `ha-log.txt`. Since 1.3 it is
/// (`HADashboard-Catalyst.entitlements`: `com.apple.security.app-sandbox`) and keeps both under
/// `~/Library/Containers/<bundle id>/Data/`, which macOS makes at its first launch; a sandboxed app
/// ignores the global domain. Sandboxed = the build's signature says so, or the container exists.
public struct MacAppLocations: Sendable, Hashable {
    /// Shown in the plan (the home folder differs per user).
    public static let installRootDisplay = "~/Library/Application Support/hadeploy/mac"

    var home: URL
    var bundleID: String
    /// The app's folder name (`HA Dashboard.app`), from the artifact.
    var appName: String
    /// The build's code signature has `com.apple.security.app-sandbox` true.
    var sandboxedBuild = false

    /// `<install root>/<bundle id>`: hadeploy's own folder; nothing else writes there.
    var installFolder: URL {
        home.appendingPathComponent("Library/Application Support/hadeploy/mac")
            .appendingPathComponent(bundleID)
    }

    /// The copy that runs.
    var installedApp: URL { installFolder.appendingPathComponent(appName) }

    /// The copy the last install replaced: `open` it to go back.
    var previousApp: URL { installFolder.appendingPathComponent("previous").appendingPathComponent(appName) }

    /// The sandbox container's data folder, when macOS has made one for this bundle id.
    var container: URL {
        home.appendingPathComponent("Library/Containers").appendingPathComponent(bundleID)
            .appendingPathComponent("Data")
    }

    func isSandboxed(in fileSystem: any FileSystem) -> Bool {
        sandboxedBuild || hasContainer(in: fileSystem)
    }

    /// Whether macOS has made the container (the sandboxed app was opened once).
    func hasContainer(in fileSystem: any FileSystem) -> Bool {
        fileSystem.isDirectory(atPath: container.path)
    }

    /// Whether an executable's code signature asks for the App Sandbox.
    static func asksForSandbox(executable: Data?) -> Bool {
        guard let xml = executable.flatMap({ MachOEntitlements.xml(in: $0) }),
            let entitlements = try? PropertyListSerialization.propertyList(from: xml, format: nil)
                as? [String: Any]
        else { return false }
        return entitlements["com.apple.security.app-sandbox"] as? Bool == true
    }

    /// Where `Documents/ha-log.txt` and `Library/Preferences/<bundle id>.plist` are found: the home
    /// folder for the unsandboxed app, else its container.
    func dataFolder(in fileSystem: any FileSystem) -> URL { isSandboxed(in: fileSystem) ? container : home }

    /// What `defaults` is given: the domain name, or the container's plist path for a sandboxed app
    /// (`defaults` takes a path for a domain outside `~/Library/Preferences`).
    func defaultsDomain(in fileSystem: any FileSystem) -> String {
        isSandboxed(in: fileSystem)
            ? container.appendingPathComponent("Library/Preferences/\(bundleID).plist").path : bundleID
    }
}
