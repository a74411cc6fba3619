import HADeployCore

/// Builds `pymobiledevice3` (PyPI) commands as values, for iOS 17+ devices on Linux.
///
/// Lockdown-level commands (`usbmux list`, `apps ...`, `crash pull`, `mounter`) take `--udid` and work
/// over usbmuxd; developer services on iOS 17+ (`developer dvt ...`) live behind the RemoteXPC tunnel,
/// reached with `--tunnel <udid>` through a running `tunneld`.
public struct PyMobileDevice3Commands: Sendable, Hashable {
    public var executable: String

    public init(executable: String = "pymobiledevice3") {
        self.executable = executable
    }

    public func version() -> ProcessCommand {
        ProcessCommand(executable, ["version"])
    }

    /// Devices usbmuxd sees, as a JSON list.
    public func listDevices() -> ProcessCommand {
        ProcessCommand(executable, ["usbmux", "list"])
    }

    /// Installed apps, as a JSON object keyed by bundle id.
    public func listApps(udid: String) -> ProcessCommand {
        ProcessCommand(executable, ["apps", "list", "--udid", udid])
    }

    public func install(udid: String, app: String) -> ProcessCommand {
        ProcessCommand(executable, ["apps", "install", "--udid", udid, app])
    }

    /// Mounts the (personalized, on iOS 17+) Developer Disk Image; a no-op when it is mounted.
    public func autoMount(udid: String) -> ProcessCommand {
        ProcessCommand(executable, ["mounter", "auto-mount", "--udid", udid])
    }

    /// `dvt launch` takes the bundle id and the app's arguments as ONE string it splits with Python's
    /// `shlex.split`, so each word is quoted here the POSIX way (a value with spaces stays one argument).
    public func launch(udid: String, bundleID: String, arguments: [String], secrets: Set<String> = [])
        -> ProcessCommand
    {
        let line = ([bundleID] + arguments).map(Self.shellQuoted).joined(separator: " ")
        // The quoted form of a secret is what appears in the line (`'to'"'"'ken'` for `to'ken`).
        return ProcessCommand(
            executable, ["developer", "dvt", "launch", "--tunnel", udid, "--kill-existing", line],
            secretValues: secrets.union(secrets.map(Self.shellQuoted)))
    }

    public func screenshot(udid: String, to path: String) -> ProcessCommand {
        ProcessCommand(executable, ["developer", "dvt", "screenshot", "--tunnel", udid, path])
    }

    /// Copies the device's crash reports into `directory`.
    public func pullCrashReports(udid: String, into directory: String) -> ProcessCommand {
        ProcessCommand(executable, ["crash", "pull", "--udid", udid, directory])
    }

    /// Quotes a word so `shlex.split` gives it back unchanged.
    static func shellQuoted(_ word: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+")
        if !word.isEmpty, word.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\"'\"'") + "'"
    }
}
