import HADeployCore

/// Builds `rosettasim-ctl` commands as values.
///
/// rosettasim-ctl is a third-party "drop-in simctl replacement with legacy device support" (RosettaSim)
/// for x86_64 runtimes (iOS 7–14) whose `simctl install/launch` hang. The interface assumed here, from
/// its usage text: `list` (passed through to `xcrun simctl list`, so `list -j devices` is simctl's JSON),
/// `boot <UDID>`, `install <UDID> <app>`, `launch <UDID> <bundle-id>` (no app arguments),
/// `terminate <UDID> <bundle-id>`, `screenshot <UDID> <out.png>`. Each applies its own internal timeout
/// (`gtimeout` from coreutils); ours is on top of it.
public struct RosettaSimCommands: Sendable, Hashable {
    /// The tool's path (`.env` key `ROSETTASIM_CTL`).
    public var executable: String

    public init(executable: String) {
        self.executable = executable
    }

    public func listDevices() -> ProcessCommand {
        ProcessCommand(executable, ["list", "-j", "devices"])
    }

    public func boot(_ udid: String) -> ProcessCommand {
        ProcessCommand(executable, ["boot", udid])
    }

    public func install(_ udid: String, app: String) -> ProcessCommand {
        ProcessCommand(executable, ["install", udid, app])
    }

    /// Takes no app arguments: the driver hands them over as the app's preferences instead.
    public func launch(_ udid: String, bundleID: String) -> ProcessCommand {
        ProcessCommand(executable, ["launch", udid, bundleID])
    }

    /// Legacy runtimes: JSON with `DataContainer` (from the LaunchServices map); native ones pass
    /// through `xcrun simctl appinfo`, an old-style plist with `DataContainer = "file:///…/";`.
    public func appInfo(_ udid: String, bundleID: String) -> ProcessCommand {
        ProcessCommand(executable, ["appinfo", udid, bundleID])
    }

    public func terminate(_ udid: String, bundleID: String) -> ProcessCommand {
        ProcessCommand(executable, ["terminate", udid, bundleID])
    }

    public func screenshot(_ udid: String, to path: String) -> ProcessCommand {
        ProcessCommand(executable, ["screenshot", udid, path])
    }
}
