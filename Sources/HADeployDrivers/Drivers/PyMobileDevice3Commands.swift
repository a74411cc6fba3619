import Foundation
import HADeployCore

/// Builds `pymobiledevice3` (PyPI) commands as values, for iOS 17+ devices on Linux.
///
/// Lockdown-level commands (`usbmux list`, `apps ...`, `crash pull`, `mounter`) take `--udid` and work
/// over usbmuxd; developer services on iOS 17+ (`developer dvt ...`) live behind the RemoteXPC tunnel:
/// pymobiledevice3's own userspace tunnel with `--udid` (no root, no tunneld; iOS 17.4+), or a running
/// `tunneld`'s with `--tunnel <udid>` when it has one to the device.
public struct PyMobileDevice3Commands: Sendable, Hashable {
    public var executable: String
    /// Added to every command's environment (`USBMUXD_SOCKET_ADDRESS` of the device's usbmuxd).
    public var environment: [String: String]

    public init(executable: String = "pymobiledevice3", environment: [String: String] = [:]) {
        self.executable = executable
        self.environment = environment
    }

    /// How a developer command reaches the device's RemoteXPC services.
    public enum TunnelRoute: Sendable, Hashable {
        /// pymobiledevice3's own userspace tunnel (CoreDeviceProxy over lockdown), no root.
        case userspace
        /// The tunnel a running `tunneld` keeps to the device.
        case tunneld
    }

    func tunnelOptions(_ route: TunnelRoute, udid: String) -> [String] {
        switch route {
        case .userspace: return ["--userspace", "--udid", udid]
        case .tunneld: return ["--tunnel", udid]
        }
    }

    func command(_ arguments: [String]) -> ProcessCommand {
        ProcessCommand(executable, arguments, environment: environment)
    }

    public func version() -> ProcessCommand {
        command(["version"])
    }

    /// Devices usbmuxd sees, as a JSON list.
    public func listDevices() -> ProcessCommand {
        command(["usbmux", "list"])
    }

    /// Installed apps, as a JSON object keyed by bundle id.
    public func listApps(udid: String) -> ProcessCommand {
        command(["apps", "list", "--udid", udid])
    }

    public func install(udid: String, app: String) -> ProcessCommand {
        command(["apps", "install", "--udid", udid, app])
    }

    /// `true` or `false`: whether Developer Mode is on.
    public func developerModeStatus(udid: String) -> ProcessCommand {
        command(["amfi", "developer-mode-status", "--udid", udid])
    }

    /// The personalized image's signature when it is mounted; "… is not mounted" (exit 1) when not.
    public func lookupPersonalized(udid: String) -> ProcessCommand {
        command(["mounter", "lookup", "Personalized", "--udid", udid])
    }

    /// Mounts the (personalized, on iOS 17+) Developer Disk Image. pymobiledevice3 downloads the image
    /// and asks Apple's signing server before it checks, so this needs internet even when mounted.
    public func autoMount(udid: String) -> ProcessCommand {
        command(["mounter", "auto-mount", "--udid", udid])
    }

    /// `dvt launch` takes the bundle id and the app's arguments as ONE string it splits with Python's
    /// `shlex.split`, so each word is quoted here the POSIX way (a value with spaces stays one argument).
    ///
    /// The argument list is not on the command line: pymobiledevice3's own console script is run by
    /// its Python interpreter (`interpreter`, from the script's `#!` line) with `sys.argv` read from
    /// stdin, so the access token never appears in `/proc/PID/cmdline`. It behaves exactly like
    /// `pymobiledevice3 developer dvt launch --userspace --udid UDID --kill-existing LINE`.
    public func launch(
        udid: String, bundleID: String, arguments: [String], secrets: Set<String> = [], interpreter: [String],
        script: String, route: TunnelRoute = .userspace
    ) -> ProcessCommand {
        let argv = launchArgv(udid: udid, bundleID: bundleID, arguments: arguments, route: route)
        let payload = (try? JSONSerialization.data(withJSONObject: argv)) ?? Data("[]".utf8)
        return ProcessCommand(
            interpreter[0], Array(interpreter.dropFirst()) + ["-c", Self.argvFromStdin, script],
            environment: environment, secretValues: secrets.union(secrets.map(Self.shellQuoted)),
            standardInput: payload)
    }

    /// pymobiledevice3's own argument list for the launch, secrets included: only ever sent on stdin.
    func launchArgv(udid: String, bundleID: String, arguments: [String], route: TunnelRoute = .userspace)
        -> [String]
    {
        let line = ([bundleID] + arguments).map(Self.shellQuoted).joined(separator: " ")
        return ["developer", "dvt", "launch"] + tunnelOptions(route, udid: udid) + ["--kill-existing", line]
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

    public func screenshot(udid: String, to path: String, route: TunnelRoute = .userspace) -> ProcessCommand {
        command(["developer", "dvt", "screenshot"] + tunnelOptions(route, udid: udid) + [path])
    }

    /// Copies the device's crash reports into `directory`.
    public func pullCrashReports(udid: String, into directory: String) -> ProcessCommand {
        command(["crash", "pull", "--udid", udid, directory])
    }

    /// Quotes a word so `shlex.split` gives it back unchanged.
    static func shellQuoted(_ word: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+")
        if !word.isEmpty, word.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\"'\"'") + "'"
    }
}
