import Foundation
import HADeployCore

/// Builds the macOS commands that deploy the Mac Catalyst app on this Mac, as values. The bundle id
/// inside the AppleScript text has passed `ArtifactNames.bundleIdentifierProblem` (letters, digits,
/// `-` and `.` only), so it cannot end the quoted string.
public struct MacCommands: Sendable, Hashable {
    /// Executables by name, for a non-standard install (or a stand-in in tests); else found on PATH.
    public var tools: [String: String]

    public init(tools: [String: String] = [:]) {
        self.tools = tools
    }

    func command(_ name: String, _ arguments: [String]) -> ProcessCommand {
        ProcessCommand(tools[name] ?? name, arguments)
    }

    /// The macOS version (`15.5`).
    public func productVersion() -> ProcessCommand {
        command("sw_vers", ["-productVersion"])
    }

    /// The machine's architecture (`arm64`, `x86_64`).
    public func machine() -> ProcessCommand {
        command("uname", ["-m"])
    }

    /// Copies a bundle as the Finder would: symbolic links, extended attributes and the code
    /// signature's resource forks kept.
    public func copy(_ source: String, to destination: String) -> ProcessCommand {
        command("ditto", [source, destination])
    }

    /// The app's preferences domain as an XML plist on stdout (`defaults export DOMAIN -`).
    public func exportDefaults(_ domain: String) -> ProcessCommand {
        command("defaults", ["export", domain, "-"])
    }

    /// Replaces the domain with the plist on stdin (`defaults import DOMAIN -`), through cfprefsd,
    /// so the running system's cache agrees with the file — and the token is on no command line.
    public func importDefaults(_ domain: String, plist: Data, secrets: Set<String>) -> ProcessCommand {
        var command = self.command("defaults", ["import", domain, "-"])
        command.standardInput = plist
        command.secretValues = secrets
        return command
    }

    /// Prints `true` or `false`; asks without launching the app.
    public func isRunning(_ bundleID: String) -> ProcessCommand {
        command("osascript", ["-e", "application id \"\(bundleID)\" is running"])
    }

    /// Asks the running app to quit as the Dock's Quit does (the app saves its state); a stopped app
    /// is not launched to be told.
    public func quit(_ bundleID: String) -> ProcessCommand {
        command(
            "osascript",
            [
                "-e",
                "if application id \"\(bundleID)\" is running then tell application id \"\(bundleID)\" to quit",
            ])
    }

    /// Stops the app's processes by executable name, as the old script's `killall "HA Dashboard"`.
    public func kill(_ executable: String) -> ProcessCommand {
        command("killall", [executable])
    }

    /// Starts the app at `path` through LaunchServices, as a double-click would.
    public func open(_ path: String) -> ProcessCommand {
        command("open", [path])
    }

    /// Starts a new instance of the app at `path` with launch arguments (`open -n APP --args …`), as
    /// the app's own script starts the sandboxed build: its argument domain, read once. Nothing
    /// secret goes here — every user can read a command line.
    public func open(_ path: String, arguments: [String]) -> ProcessCommand {
        command("open", ["-n", path, "--args"] + arguments)
    }
}
