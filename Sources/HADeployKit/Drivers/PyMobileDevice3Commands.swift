import Foundation
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
    ///
    /// The argument list is not on the command line: pymobiledevice3's own console script is run by
    /// its Python interpreter (`interpreter`, from the script's `#!` line) with `sys.argv` read from
    /// stdin, so the access token never appears in `/proc/PID/cmdline`. It behaves exactly like
    /// `pymobiledevice3 developer dvt launch --tunnel UDID --kill-existing LINE`.
    public func launch(
        udid: String, bundleID: String, arguments: [String], secrets: Set<String> = [], interpreter: [String],
        script: String
    ) -> ProcessCommand {
        let argv = launchArgv(udid: udid, bundleID: bundleID, arguments: arguments)
        let payload = (try? JSONSerialization.data(withJSONObject: argv)) ?? Data("[]".utf8)
        return ProcessCommand(
            interpreter[0], Array(interpreter.dropFirst()) + ["-c", Self.argvFromStdin, script],
            secretValues: secrets.union(secrets.map(Self.shellQuoted)), standardInput: payload)
    }

    /// pymobiledevice3's own argument list for the launch, secrets included: only ever sent on stdin.
    func launchArgv(udid: String, bundleID: String, arguments: [String]) -> [String] {
        let line = ([bundleID] + arguments).map(Self.shellQuoted).joined(separator: " ")
        return ["developer", "dvt", "launch", "--tunnel", udid, "--kill-existing", line]
    }

    /// Runs a console script (argv[1] of `python -c`) as `__main__` with the argument list read from
    /// stdin as JSON; stdin is then reattached to /dev/null.
    static let argvFromStdin = """
        import json, os, runpy, sys
        argv = json.loads(sys.stdin.read())
        sys.stdin = open(os.devnull)
        script = sys.argv[1]
        sys.argv = [script] + argv
        runpy.run_path(script, run_name="__main__")
        """

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
