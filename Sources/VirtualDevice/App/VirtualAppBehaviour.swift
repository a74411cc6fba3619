import Foundation

/// What a launched app does. The emulator runs `run` in a task when debugserver launches an
/// installed app and cancels it when the app is killed; the app reports its screen through the context.
///
/// The default, `HADashboardAppBehaviour`, acts like the HA Dashboard app.
public protocol VirtualAppBehaviour: Sendable {
    func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async
}

/// Everything a launched app can know: its bundle, its launch arguments and the device.
public struct VirtualAppLaunch: Sendable, Equatable {
    public let bundleIdentifier: String
    public let displayName: String
    /// CFBundleShortVersionString (falls back to CFBundleVersion).
    public let version: String
    /// CFBundleVersion.
    public let build: String
    /// Launch arguments without argv[0].
    public let arguments: [String]
    /// `NAME=value` entries.
    public let environment: [String]
    public let deviceName: String
    public let udid: String
    public let productType: String
    public let productVersion: String
    /// The app's data container on the host (`Documents/`, `Library/Preferences/` …), kept across
    /// launches and upgrades, removed with the app.
    public let dataContainer: URL
    /// The device's profile says its app build fires `ha_dashboard_loaded`.
    public let sendsLoadedEvent: Bool

    /// The value following `-name` in the arguments (`-HADashboard lobby` → "lobby").
    public func argument(_ name: String) -> String? {
        guard let index = arguments.firstIndex(of: "-" + name), index + 1 < arguments.count else {
            return nil
        }
        return arguments[index + 1]
    }
}
