import Foundation
import HomeAssistant
import Logging

/// The HA Dashboard app (github:ha-dashboard/ios-app) as its observable behaviour, for virtual
/// devices and for anything else that must stand in for it (a jailbroken twin's `open`).
///
/// Public entry, small and stable:
///
///     await VirtualHADashboardApp.run(launch) { screen in … }   // returns when the task is cancelled
///     VirtualHADashboardApp.crashAtLaunch(launch)                // what a crash at start leaves behind
///
/// What it does, as the real app does it (HAAppDelegate didFinishLaunching, HALog,
/// HAConnectionManager, HADeviceRegistration, HASensorReporter):
/// - reads its settings through NSUserDefaults: `-Key value` launch arguments over
///   `Library/Preferences/<bundle id>.plist` (`HAServerURL`+`HAAccessToken` saved to the keychain
///   when both are non-empty, `HADashboard` (empty = default), `HAKioskMode`, `HADemoMode`,
///   `HAClearCredentials`, `HAAutoRegister`, `HALogMinLevel`) and saves its own settings back there;
/// - appends a session to `Documents/ha-log.txt` with the app's own lines (`NSUserDefaults read END
///   (url=YES, token=YES)`, `isConfigured=YES`, `[conn] WebSocket authenticated`, `[conn] Lovelace
///   config received: N views, M cards, strategy=…`, `Auth failed: …`, `Lovelace config fetch
///   failed: …`);
/// - connects to Home Assistant, fetches `lovelace/config` for the selected dashboard and falls
///   back as the app does (config_not_found → the generated "original-states" dashboard; any other
///   error → the default entity dashboard); a refused token is retried with the app's backoff;
/// - with its device integration on (`HAAutoRegister YES`, or saved), registers a `mobile_app`
///   device (app_id io.hadashboard.app, device_name = the device's name) and reports its sensors,
///   `active_dashboard` each time it receives a dashboard;
/// - fires no event, unless ``VirtualHADashboardOptions/sendsLoadedEvent`` says it is such a build;
/// - shows what it fetched (views and cards) through `screen`.
public enum VirtualHADashboardApp {
    /// Runs one launch until the calling task is cancelled (the app is killed).
    public static func run(
        _ launch: VirtualHADashboardLaunch, screen: @escaping @Sendable (VirtualScreen) -> Void
    ) async {
        let session = AppSession(launch: launch, screen: screen)
        await session.run()
    }

    /// A launch that dies at start (SIGABRT): the session header and the crash handler's block.
    public static func crashAtLaunch(_ launch: VirtualHADashboardLaunch) {
        let log = AppLogFile(
            documents: launch.dataContainer.appendingPathComponent("Documents"), model: launch.model,
            systemVersion: launch.systemVersion, fileSystem: launch.fileSystem)
        log.info("log", "Crash handler installed")
        log.startup("didFinishLaunching START")
        log.crash(
            signal: 6, name: "Abort trap: 6",
            frames: [
                "0   HADashboard  0x0000000100a1c2f4 _HACrashSignalHandler + 72",
                "1   libsystem_platform.dylib  0x00000001a1b2c3d4 _sigtramp + 56",
                "2   libsystem_c.dylib  0x00000001a1a0b0c0 abort + 180",
            ])
    }
}
