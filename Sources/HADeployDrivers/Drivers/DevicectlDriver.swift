import DeployModel
import DeviceSpec
import Foundation
import HADeployCore

/// Drives an iOS 17+ device through `xcrun devicectl` (macOS, Xcode 15+): every command's
/// `--json-output` file is parsed and then deleted (the launch result echoes the app's arguments,
/// access token included).
public actor DevicectlDriver: DeviceDriver {
    public struct Configuration: Sendable {
        public var label: String
        /// The UDID (or CoreDevice identifier, or name) passed to `--device`; empty when `model` finds it.
        public var device: String
        /// With no `device`: the one physical device `devicectl list devices` shows whose model
        /// (marketing name) starts with this — as the app's script finds its iPad Pro.
        public var model: String?
        public var host: HostPlatform
        public var commands: DevicectlCommands
        /// Where the JSON output files and pulled crash logs live briefly.
        public var scratchDirectory: URL
        public var deadlines: DriverDeadlines

        public init(
            label: String, device: String, model: String? = nil, host: HostPlatform,
            commands: DevicectlCommands = .init(), scratchDirectory: URL, deadlines: DriverDeadlines = .init()
        ) {
            self.label = label
            self.device = device
            self.model = model
            self.host = host
            self.commands = commands
            self.scratchDirectory = scratchDirectory
            self.deadlines = deadlines
        }
    }

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    nonisolated let fileSystem: any FileSystem
    /// The app's process id from the last launch, for `terminate`.
    public private(set) var launchedProcessID: Int?
    /// The CoreDevice identifier `model` found at connect.
    private var found: String?

    /// What `--device` is given: the configured device, or the one its model found.
    var target: String { found ?? configuration.device }

    public init(configuration: Configuration, runner: any ProcessRunner, fileSystem: any FileSystem) {
        self.configuration = configuration
        self.runner = runner
        self.fileSystem = fileSystem
    }

    var scratch: ScratchFolder {
        ScratchFolder(fileSystem: fileSystem, directory: configuration.scratchDirectory)
    }

    /// Runs one devicectl command whose JSON file `build` names, and returns that file's `result` bytes.
    func devicectl(
        _ step: String, limit: Duration, secrets: Set<String> = [], fix: String? = nil,
        _ build: (_ jsonOutput: String, _ timeout: Int) -> ProcessCommand
    ) async throws -> Data {
        guard configuration.host == .macOS else {
            throw AppleDriverError.needsMacOS(
                tool: "xcrun devicectl", step: step, device: configuration.label, host: configuration.host)
        }
        let invoker = ToolInvoker(
            runner: runner, tool: "xcrun devicectl", device: configuration.label,
            installHint: "install Xcode 15 or later (devicectl ships with it)", secrets: secrets)
        let file = try scratch.newPath("hadeploy-devicectl", suffix: ".json")
        defer { scratch.remove(file) }
        // devicectl's own --timeout fires first and explains itself in the JSON; ours is the backstop.
        let seconds = max(5, Int(clampingDouble: limit.seconds.rounded(.up)))
        let command = build(file.path, seconds)
        let output = try await invoker.run(command, step: step, timeout: limit + .seconds(15))
        if let data = fileSystem.contents(atPath: file.path), !data.isEmpty {
            do {
                _ = try DevicectlOutputParser.result(data)
                return data
            } catch let failure as DevicectlOutputParser.Failure {
                throw AppleDriverError(
                    .failed, step: step, device: configuration.label,
                    reason: "devicectl: \(invoker.redact(failure.description))", fix: fix)
            } catch {
                if output.status != 0 { throw invoker.failure(command, output: output, step: step, fix: fix) }
                throw AppleDriverError(
                    .unexpectedOutput, step: step, device: configuration.label, reason: "\(error)")
            }
        }
        if output.status != 0 { throw invoker.failure(command, output: output, step: step, fix: fix) }
        throw AppleDriverError(
            .unexpectedOutput, step: step, device: configuration.label,
            reason: "devicectl exited 0 but wrote no --json-output file")
    }

    func parsed<T>(_ step: String, _ parse: () throws -> T) throws -> T {
        do {
            return try parse()
        } catch {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: configuration.label, reason: "\(error)")
        }
    }

    public func connect() async throws -> ConnectedDevice {
        if found == nil, configuration.device.isEmpty, let model = configuration.model {
            found = try await findByModel(model)
        }
        let target = self.target
        let data = try await devicectl(
            "connect", limit: configuration.deadlines.limit(.connect),
            fix:
                "connect it by USB (or the same network), unlock it, and check `xcrun devicectl list devices`"
        ) { json, timeout in
            configuration.commands.infoDetails(device: target, jsonOutput: json, timeout: timeout)
        }
        let device = try parsed("connect") { try DevicectlOutputParser.details(data) }
        if let mode = device.developerModeStatus, mode != "enabled" {
            throw AppleDriverError(
                .unavailable, step: "connect", device: configuration.label,
                reason: "Developer Mode is \(mode) on \(device.name)",
                fix: "turn it on in Settings › Privacy & Security › Developer Mode (the device restarts)")
        }
        return ConnectedDevice(
            udid: device.udid ?? target, name: device.name, productType: device.productType,
            iosVersion: device.osVersion ?? "", arch: device.cpuType)
    }

    /// The one physical device `devicectl list devices` shows whose model starts with `model`: none
    /// or several is said with the key to set, as the app's script says it.
    func findByModel(_ model: String) async throws -> String {
        let data = try await devicectl(
            "connect", limit: configuration.deadlines.limit(.connect),
            fix: "connect it by USB (or the same network) and check `xcrun devicectl list devices`"
        ) { json, timeout in
            configuration.commands.listDevices(jsonOutput: json, timeout: timeout)
        }
        let devices = try parsed("connect") { try DevicectlOutputParser.devices(data) }
        let matches = devices.filter {
            $0.reality == "physical"
                && ($0.marketingName ?? "").lowercased().hasPrefix(model.lowercased())
        }
        guard matches.count == 1, let only = matches.first else {
            throw AppleDriverError(
                .unavailable, step: "connect", device: configuration.label,
                reason: matches.isEmpty
                    ? "devicectl lists no physical \(model)"
                    : "devicectl lists \(matches.count) physical devices of model \(model) ("
                        + matches.map { "\($0.name): \($0.identifier)" }.joined(separator: ", ") + ")",
                fix:
                    "set its CoreDevice identifier as the device's udid in .env (the key devices.yaml names)",
                isTransient: matches.isEmpty)
        }
        return only.identifier
    }

    /// Nothing to do: devicectl mounts the personalized Developer Disk Image itself when needed.
    public func prepare() async throws {}

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        let target = self.target
        let size = DriverDeadlines.size(of: artifact.path, in: fileSystem)
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "installing"))
        // Wi-Fi installs are slow and devicectl adds ~10 s: a minute plus the app at 4 MB/s.
        let data = try await devicectl(
            "install", limit: configuration.deadlines.install(bytes: size),
            fix: "check the app is signed for this device (provisioning profile) and the device is unlocked"
        ) { json, timeout in
            configuration.commands.installApp(
                device: target, app: artifact.path, jsonOutput: json, timeout: timeout)
        }
        let installed = try parsed("install") { try DevicectlOutputParser.installedBundleIDs(data) }
        guard installed.contains(artifact.bundleID) else {
            throw AppleDriverError(
                .unexpectedOutput, step: "install", device: configuration.label,
                reason:
                    "devicectl reported installing \(installed.isEmpty ? "nothing" : installed.joined(separator: ", ")), "
                    + "not \(artifact.bundleID)")
        }
        progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "installed"))
        return .installed
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        let target = self.target
        // devicectl's argv is visible to every user (`ps`): secret settings go into the app's
        // preferences in its data container first, the rest stay launch arguments.
        let secrets = launch.secretValues
        if !launch.secretPreferences.isEmpty {
            try await storePreferences(launch.secretPreferences, bundleID: artifact.bundleID)
        }
        let arguments = launch.publicArguments
        let data = try await devicectl(
            "launch", limit: configuration.deadlines.limit(.launch), secrets: secrets,
            fix:
                "unlock the device; a first launch of a newly trusted developer needs Settings › General › VPN & Device Management"
        ) { json, timeout in
            configuration.commands.launch(
                device: target, bundleID: artifact.bundleID, arguments: arguments, jsonOutput: json,
                timeout: timeout, secrets: secrets)
        }
        launchedProcessID = try parsed("launch") { try DevicectlOutputParser.launchedProcessID(data) }
    }

    /// Pulls `Library/Preferences/<bundle>.plist` (absent on a first launch), merges `values`, and
    /// copies it back from a 0600 file in a 0700 folder that is removed at once.
    func storePreferences(_ values: [String: PropertyListValue], bundleID: String) async throws {
        let target = self.target
        let remote = "Library/Preferences/\(bundleID).plist"
        let folder = try scratch.newFolder("hadeploy-prefs", attributes: [.posixPermissions: 0o700])
        defer { scratch.remove(folder) }
        let local = folder.appendingPathComponent("\(bundleID).plist")
        let limit = configuration.deadlines.limit(.launch)
        let pulled =
            (try? await devicectl("launch", limit: limit) { json, timeout in
                configuration.commands.copyAppContainer(
                    .from, device: target, bundleID: bundleID, source: remote, destination: local.path,
                    jsonOutput: json,
                    timeout: timeout)
            }) != nil
        let plist = try LaunchPreferences.plist(
            values, mergedInto: pulled ? fileSystem.contents(atPath: local.path) : nil)
        _ = fileSystem.createFile(atPath: local.path, contents: nil, attributes: [.posixPermissions: 0o600])
        try fileSystem.write(plist, to: local, options: [])
        _ = try await devicectl(
            "launch", limit: limit,
            fix: "the app must be a development build (its data container is only reachable then)"
        ) { json, timeout in
            configuration.commands.copyAppContainer(
                .to, device: target, bundleID: bundleID, source: local.path, destination: remote,
                jsonOutput: json,
                timeout: timeout)
        }
    }

    /// Sends SIGTERM to the process the last launch started.
    public func terminate() async throws {
        guard let pid = launchedProcessID else { return }
        let target = self.target
        _ = try await devicectl("terminate", limit: configuration.deadlines.terminate) {
            json, timeout in
            configuration.commands.signal(device: target, pid: pid, jsonOutput: json, timeout: timeout)
        }
        launchedProcessID = nil
    }

    /// Pulls the device's crash logs into a scratch folder and keeps the app's reports newer than `since`.
    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let target = self.target
        let pulled = try scratch.newFolder("hadeploy-crashes")
        defer { scratch.remove(pulled) }
        _ = try await devicectl("crash_check", limit: configuration.deadlines.limit(.crashCheck)) {
            json, timeout in
            configuration.commands.copyCrashLogs(
                device: target, destination: pulled.path, jsonOutput: json, timeout: timeout)
        }
        let scanner = CrashReportScanner(
            executable: artifact.executable, since: since, simulatorUDID: nil, fileSystem: fileSystem)
        return try scanner.copyMatches(from: pulled, into: directory)
    }

    /// `devicectl device copy from --domain-type appDataContainer`; a file devicectl cannot copy is
    /// taken as absent when the container itself answered (the app has not written it yet).
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        let target = self.target
        let file = configuration.scratchDirectory.appendingPathComponent(
            "hadeploy-appdata-\(UUID().uuidString)")
        defer { scratch.remove(file) }
        do {
            _ = try await devicectl("verify", limit: configuration.deadlines.limit(.crashCheck)) {
                json, timeout in
                configuration.commands.copyAppContainer(
                    .from, device: target, bundleID: artifact.bundleID, source: relativePath,
                    destination: file.path, jsonOutput: json, timeout: timeout)
            }
        } catch let error as AppleDriverError where error.kind == .failed {
            if "\(error)".localizedCaseInsensitiveContains("no such file") { return nil }
            throw error
        }
        return fileSystem.contents(atPath: file.path)
    }

    /// devicectl has no screenshot command (Xcode 15–26), so this says what to use instead.
    public func screenshot() async throws -> Data {
        throw AppleDriverError(
            .unavailable, step: "screenshot", device: configuration.label,
            reason: "xcrun devicectl cannot take screenshots",
            fix: "for a screenshot of an iOS 17+ device, `pip install pymobiledevice3` and use "
                + "`pymobiledevice3 developer dvt screenshot --userspace --udid UDID OUT.png` "
                + "(its own userspace tunnel: no root, no tunneld)")
    }
}
