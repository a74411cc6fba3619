import Foundation
import HADeployCore

/// Builds `xcrun simctl` commands as values.
public struct SimctlCommands: Sendable, Hashable {
    public var xcrun: String
    /// `<Xcode.app>/Contents/Developer` of the flavour's Xcode, passed as `DEVELOPER_DIR` (never xcode-select).
    public var developerDir: String?

    public init(xcrun: String = "xcrun", developerDir: String? = nil) {
        self.xcrun = xcrun
        self.developerDir = developerDir
    }

    /// Every simulator with its runtime, state and availability, as JSON.
    public func listDevices() -> ProcessCommand {
        simctl(["list", "-j", "devices"])
    }

    /// The app's preferences domain as an XML plist on stdout (`defaults export DOMAIN -`), run inside
    /// the simulator so cfprefsd answers.
    public func exportDefaults(_ udid: String, bundleID: String) -> ProcessCommand {
        simctl(["spawn", udid, "defaults", "export", bundleID, "-"])
    }

    /// Replaces the app's preferences domain with the plist on stdin (`defaults import DOMAIN -`):
    /// how a secret launch setting reaches the app without being on any command line.
    public func importDefaults(_ udid: String, bundleID: String, plist: Data, secrets: Set<String>)
        -> ProcessCommand
    {
        var command = simctl(["spawn", udid, "defaults", "import", bundleID, "-"])
        command.standardInput = plist
        command.secretValues = secrets
        return command
    }

    public func boot(_ udid: String) -> ProcessCommand {
        simctl(["boot", udid])
    }

    /// Blocks until the simulator has finished booting (`-b`: boots it first if it is shut down).
    public func bootStatus(_ udid: String) -> ProcessCommand {
        simctl(["bootstatus", udid, "-b"])
    }

    public func install(_ udid: String, app: String) -> ProcessCommand {
        simctl(["install", udid, app])
    }

    /// Prints the installed app bundle's path; fails when the app is not installed.
    public func appContainer(_ udid: String, bundleID: String) -> ProcessCommand {
        simctl(["get_app_container", udid, bundleID, "app"])
    }

    /// Prints the app's data container path (`Documents/`, `Library/` …).
    public func dataContainer(_ udid: String, bundleID: String) -> ProcessCommand {
        simctl(["get_app_container", udid, bundleID, "data"])
    }

    /// Launches, replacing a running instance. simctl hands the app every `SIMCTL_CHILD_X` variable
    /// of its own environment as `X` (simctl help launch), so `environment` is prefixed here.
    public func launch(
        _ udid: String, bundleID: String, arguments: [String], environment: [String: String] = [:],
        secrets: Set<String> = []
    ) -> ProcessCommand {
        var command = simctl(["launch", "--terminate-running-process", udid, bundleID] + arguments)
        for (key, value) in environment {
            command.environment["SIMCTL_CHILD_" + key] = value
        }
        command.secretValues = secrets
        return command
    }

    public func terminate(_ udid: String, bundleID: String) -> ProcessCommand {
        simctl(["terminate", udid, bundleID])
    }

    /// Writes a PNG of the simulator's screen to `path`.
    public func screenshot(_ udid: String, to path: String) -> ProcessCommand {
        simctl(["io", udid, "screenshot", path])
    }

    func simctl(_ arguments: [String]) -> ProcessCommand {
        var environment: [String: String] = [:]
        if let developerDir { environment["DEVELOPER_DIR"] = developerDir }
        return ProcessCommand(xcrun, ["simctl"] + arguments, environment: environment)
    }
}
