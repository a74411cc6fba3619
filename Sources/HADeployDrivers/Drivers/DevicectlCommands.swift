import HADeployCore

/// Builds `xcrun devicectl` commands as values (Xcode 15+, iOS 17+ devices, macOS only).
///
/// Every command writes its result to `--json-output <file>` — devicectl's documented stable
/// interface (its human-readable output may change between Xcodes) — and carries `--timeout`,
/// because devicectl's own default (about 20 s for some steps) is too short for large installs.
public struct DevicectlCommands: Sendable, Hashable {
    public var xcrun: String
    public var developerDir: String?

    public init(xcrun: String = "xcrun", developerDir: String? = nil) {
        self.xcrun = xcrun
        self.developerDir = developerDir
    }

    public func listDevices(jsonOutput: String, timeout: Int) -> ProcessCommand {
        devicectl(["list", "devices"], jsonOutput: jsonOutput, timeout: timeout)
    }

    /// `device` may be the UDID, the CoreDevice identifier, the serial number or the name.
    public func infoDetails(device: String, jsonOutput: String, timeout: Int) -> ProcessCommand {
        devicectl(
            ["device", "info", "details", "--device", device], jsonOutput: jsonOutput, timeout: timeout)
    }

    public func installApp(device: String, app: String, jsonOutput: String, timeout: Int) -> ProcessCommand {
        devicectl(
            ["device", "install", "app", "--device", device], jsonOutput: jsonOutput, timeout: timeout,
            positional: [app])
    }

    /// Launches, replacing a running instance; the app's arguments follow `--` so devicectl does not
    /// read `-HAServerURL` as one of its own options.
    public func launch(
        device: String, bundleID: String, arguments: [String], jsonOutput: String, timeout: Int,
        secrets: Set<String> = []
    ) -> ProcessCommand {
        var command = devicectl(
            ["device", "process", "launch", "--device", device, "--terminate-existing"],
            jsonOutput: jsonOutput,
            timeout: timeout, positional: [bundleID] + (arguments.isEmpty ? [] : ["--"] + arguments))
        command.secretValues = secrets
        return command
    }

    /// `device copy from|to` on the app's data container (`Library/Preferences/<bundle>.plist`…).
    public enum CopyDirection: String, Sendable { case from, to }

    public func copyAppContainer(
        _ direction: CopyDirection, device: String, bundleID: String, source: String, destination: String,
        jsonOutput: String, timeout: Int
    ) -> ProcessCommand {
        devicectl(
            [
                "device", "copy", direction.rawValue, "--device", device, "--domain-type", "appDataContainer",
                "--domain-identifier", bundleID, "--source", source, "--destination", destination,
            ], jsonOutput: jsonOutput, timeout: timeout)
    }

    public func signal(
        device: String, pid: Int, signal: String = "SIGTERM", jsonOutput: String, timeout: Int
    ) -> ProcessCommand {
        devicectl(
            ["device", "process", "signal", "--device", device, "--pid", String(pid), "--signal", signal],
            jsonOutput: jsonOutput, timeout: timeout)
    }

    /// Copies the device's crash logs (the `systemCrashLogs` file domain) into `destination`.
    public func copyCrashLogs(device: String, destination: String, jsonOutput: String, timeout: Int)
        -> ProcessCommand
    {
        devicectl(
            [
                "device", "copy", "from", "--device", device, "--domain-type", "systemCrashLogs", "--source",
                ".",
                "--destination", destination,
            ], jsonOutput: jsonOutput, timeout: timeout)
    }

    func devicectl(
        _ arguments: [String], jsonOutput: String, timeout: Int, positional: [String] = []
    ) -> ProcessCommand {
        var environment: [String: String] = [:]
        if let developerDir { environment["DEVELOPER_DIR"] = developerDir }
        return ProcessCommand(
            xcrun,
            ["devicectl"] + arguments + ["--json-output", jsonOutput, "--timeout", String(timeout)]
                + positional,
            environment: environment)
    }
}
