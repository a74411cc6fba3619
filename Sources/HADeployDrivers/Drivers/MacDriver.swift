import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import MobileDevice

/// Deploys the Mac Catalyst build on this Mac, as the app's `scripts/deploy.sh mac` does — the
/// running app quit, the app opened; launch settings in the app's defaults domain, or for the
/// sandboxed build (1.3) `open -n APP --args` with the settings that are not secret and the token in
/// its container's preferences — with what that script lacks: the token never on a command line
/// (`defaults import` reads the plist on stdin), a hadeploy-owned installed copy swapped in by
/// renames with the one it replaced kept, a deadline on the quit, and the app's own log as evidence.
public actor MacDriver: DeviceDriver {
    public struct Configuration: Sendable {
        /// The device's name in devices.yaml, for messages.
        public var label: String
        public var host: HostPlatform
        /// The user's home folder (`HOME`): the app's preferences, Documents and hadeploy's copy.
        public var home: URL
        public var commands: MacCommands
        /// `~/Library/Logs/DiagnosticReports`, where macOS writes the app's crash reports.
        public var diagnosticReports: URL
        public var deadlines: DriverDeadlines
        /// How long the app has to quit when asked before it is killed.
        public var quitGrace: Duration
        /// How long a killed app has to be gone.
        public var killGrace: Duration
        /// How often the driver asks whether it has quit yet.
        public var pollInterval: Duration

        public init(
            label: String, host: HostPlatform, home: URL, commands: MacCommands = .init(),
            diagnosticReports: URL? = nil, deadlines: DriverDeadlines = .init(),
            quitGrace: Duration = .seconds(10), killGrace: Duration = .seconds(5),
            pollInterval: Duration = .milliseconds(250)
        ) {
            self.label = label
            self.host = host
            self.home = home
            self.commands = commands
            self.diagnosticReports =
                diagnosticReports ?? home.appendingPathComponent("Library/Logs/DiagnosticReports")
            self.deadlines = deadlines
            self.quitGrace = quitGrace
            self.killGrace = killGrace
            self.pollInterval = pollInterval
        }
    }

    /// Launch keys hadeploy manages. A launch argument lasts one launch, a key in the defaults
    /// domain until removed: those this launch does not send are removed, or a past `--reset`
    /// (`HAClearCredentials`) would wipe the app's login at every later start, and a past `--demo`
    /// keep it in demo mode.
    static let launchKeys = SpecLoader.managedAppKeys

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    nonisolated let fileSystem: any FileSystem
    /// Times the waits for the app to quit.
    nonisolated let clock: any WallClock
    private var connected: ConnectedDevice?

    public init(
        configuration: Configuration, runner: any ProcessRunner, fileSystem: any FileSystem,
        clock: any WallClock
    ) {
        self.configuration = configuration
        self.runner = runner
        self.fileSystem = fileSystem
        self.clock = clock
    }

    func invoker(secrets: Set<String> = []) -> ToolInvoker {
        ToolInvoker(
            runner: runner, tool: "a macOS command line tool", device: configuration.label,
            installHint: "run this on macOS (sw_vers, defaults, osascript, open and ditto ship with it)",
            secrets: secrets)
    }

    public func requireMacOS(_ step: String) throws {
        guard configuration.host == .macOS else {
            throw AppleDriverError(
                .toolMissing, step: step, device: configuration.label,
                reason: "the Mac Catalyst app runs on the Mac that deploys it; this host is "
                    + (configuration.host == .linux ? "Linux" : "\(configuration.host)"),
                fix: "deploy this device from the Mac itself, or leave it out of the targets on this host")
        }
    }

    func locations(_ artifact: Artifact) -> MacAppLocations {
        let executable = URL(fileURLWithPath: artifact.path).appendingPathComponent(
            "Contents/MacOS/\(artifact.executable)")
        return MacAppLocations(
            home: configuration.home, bundleID: artifact.bundleID,
            appName: URL(fileURLWithPath: artifact.path).lastPathComponent,
            sandboxedBuild: MacAppLocations.asksForSandbox(
                executable: fileSystem.contents(atPath: executable.path)))
    }

    public func connect() async throws -> ConnectedDevice {
        try requireMacOS("connect")
        let tool = invoker()
        let limit = configuration.deadlines.limit(.connect)
        let version = try await tool.checked(
            configuration.commands.productVersion(), step: "connect", timeout: limit
        )
        .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let machine = try await tool.checked(
            configuration.commands.machine(), step: "connect", timeout: limit
        )
        .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let mac = ConnectedDevice(
            udid: "this-mac", name: configuration.label, productType: "Mac", iosVersion: version,
            arch: machine.isEmpty ? nil : machine)
        connected = mac
        return mac
    }

    public func prepare() async throws {}

    /// Checks the artifact is this Mac's kind of app, then swaps it in unless the installed copy has
    /// the same content.
    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        try requireMacOS("install")
        try check(artifact)
        let places = locations(artifact)
        let size = DriverDeadlines.size(of: artifact.path, in: fileSystem)
        if !force, isInstalled(artifact, at: places.installedApp) {
            progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "unchanged"))
            return .unchanged
        }
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "copying"))
        let staging = places.installFolder.appendingPathComponent(".staging-\(UUID().uuidString)")
        try fileSystem.createDirectory(at: staging, withIntermediateDirectories: true)
        defer { try? fileSystem.removeItem(at: staging) }
        let staged = staging.appendingPathComponent(places.appName)
        // A local copy on one disk: 50 MB/s is pessimistic.
        _ = try await invoker().checked(
            configuration.commands.copy(artifact.path, to: staged.path), step: "install",
            timeout: configuration.deadlines.install(bytes: size),
            fix: "is there room in \(MacAppLocations.installRootDisplay)?")
        try swap(staged, into: places)
        progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "installed"))
        return .installed
    }

    /// An iOS `.app` cannot run here, nor a build without this Mac's architecture: said before
    /// anything is copied.
    func check(_ artifact: Artifact) throws {
        guard artifact.platform == .macCatalyst else {
            throw AppleDriverError(
                .failed, step: "install", device: configuration.label,
                reason: "\(artifact.path) is an iOS app (flavour \(artifact.flavour)); the Mac runs the Mac "
                    + "Catalyst build (Contents/MacOS/…)",
                fix: "give this device a flavour with `sdk: maccatalyst`, or pass that build with --artifact")
        }
        let name = URL(fileURLWithPath: artifact.path).lastPathComponent
        if let problem = ArtifactNames.pathComponentProblem(name, what: "app folder name") {
            throw AppleDriverError(.failed, step: "install", device: configuration.label, reason: problem)
        }
        if let arch = connected?.arch, !artifact.archs.isEmpty, !artifact.archs.contains(arch) {
            throw AppleDriverError(
                .failed, step: "install", device: configuration.label,
                reason: "this Mac is \(arch) but the build has only \(artifact.archs.joined(separator: "+"))",
                fix: "build the mac flavour with archs: [\(arch)]")
        }
    }

    /// Same files with the same contents as the artifact.
    func isInstalled(_ artifact: Artifact, at installed: URL) -> Bool {
        guard fileSystem.fileExists(atPath: installed.path),
            let current = try? ContentHasher.hash(of: installed, isDirectory: true, in: fileSystem),
            let wanted = try? ContentHasher.hash(
                of: URL(fileURLWithPath: artifact.path), isDirectory: true, in: fileSystem)
        else { return false }
        return current == wanted
    }

    /// Two renames on one volume: the installed copy moves to `previous/` (replacing the older one
    /// kept there), the staged copy takes its place. A failure between them puts the old copy back,
    /// so the Mac has the old app or the new one, never a half-copied bundle.
    func swap(_ staged: URL, into places: MacAppLocations) throws {
        let installed = places.installedApp
        let previous = places.previousApp
        let hadOne = fileSystem.fileExists(atPath: installed.path)
        do {
            if hadOne {
                try fileSystem.createDirectory(
                    at: previous.deletingLastPathComponent(), withIntermediateDirectories: true)
                if fileSystem.fileExists(atPath: previous.path) { try fileSystem.removeItem(at: previous) }
                try fileSystem.moveItem(at: installed, to: previous)
            }
            do {
                try fileSystem.moveItem(at: staged, to: installed)
            } catch {
                if hadOne { try? fileSystem.moveItem(at: previous, to: installed) }
                throw error
            }
        } catch {
            throw AppleDriverError(
                .failed, step: "install", device: configuration.label,
                reason: "swapping the new copy into \(installed.path): \(error.localizedDescription)",
                fix: "check the permissions of \(places.installFolder.path)")
        }
    }

    /// The copy the last install replaced (`previous/`), read as an artifact; nil when there is none.
    public func previousInstall(bundleID: String) throws -> Artifact? {
        let folder = MacAppLocations(home: configuration.home, bundleID: bundleID, appName: "")
            .installFolder.appendingPathComponent("previous")
        let apps = ((try? fileSystem.contentsOfDirectory(atPath: folder.path)) ?? [])
            .filter { $0.hasSuffix(".app") }.sorted()
        guard let name = apps.first else { return nil }
        return try ArtifactInspector(fileSystem: fileSystem).inspect(
            folder.appendingPathComponent(name), flavour: "previous")
    }

    /// `hadeploy rollback mac`: the copy the last install replaced and the installed one change
    /// places (so a second rollback undoes the first), then the running app is quit and the restored
    /// one opened. The launch settings in the defaults domain stay as they are.
    public func rollback(bundleID: String) async throws -> Artifact {
        try requireMacOS("rollback")
        guard let previous = try previousInstall(bundleID: bundleID) else {
            throw AppleDriverError(
                .unavailable, step: "rollback", device: configuration.label,
                reason:
                    "there is no earlier copy in \(MacAppLocations.installRootDisplay)/\(bundleID)/previous",
                fix: "a rollback needs two deploys of different builds")
        }
        let places = locations(previous)
        let parked = places.installFolder.appendingPathComponent(".rollback-\(UUID().uuidString)")
        do {
            if fileSystem.fileExists(atPath: places.installedApp.path) {
                try fileSystem.moveItem(at: places.installedApp, to: parked)
            }
            try fileSystem.moveItem(at: URL(fileURLWithPath: previous.path), to: places.installedApp)
            if fileSystem.fileExists(atPath: parked.path) {
                try fileSystem.moveItem(at: parked, to: URL(fileURLWithPath: previous.path))
            }
        } catch {
            if !fileSystem.fileExists(atPath: places.installedApp.path),
                fileSystem.fileExists(atPath: parked.path)
            {
                try? fileSystem.moveItem(at: parked, to: places.installedApp)
            }
            throw AppleDriverError(
                .failed, step: "rollback", device: configuration.label,
                reason: "swapping \(previous.path) back: \(error.localizedDescription)")
        }
        try await quit(previous)
        _ = try await invoker().checked(
            configuration.commands.open(places.installedApp.path), step: "rollback",
            timeout: configuration.deadlines.limit(.launch))
        var restored = previous
        restored.path = places.installedApp.path
        return restored
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        try requireMacOS("launch")
        let places = locations(artifact)
        // Quit first: a running app may write its own settings back to the domain as it quits.
        try await quit(artifact)
        guard places.isSandboxed(in: fileSystem) else {
            try await storeSettings(
                launch.preferences, domain: places.defaultsDomain(in: fileSystem),
                secrets: launch.secretValues)
            return try await open(places, arguments: nil)
        }
        // Sandboxed (1.3): started as its script starts it, `open -n APP --args` with the settings
        // that are not secret; the token goes into the container's preferences, on stdin. macOS
        // makes the container at the first launch: then the app is opened once to make it, quit,
        // and opened again with the token in place.
        if !places.hasContainer(in: fileSystem), !launch.secretPreferences.isEmpty {
            try await open(places, arguments: launch.publicArguments)
            try await waitForContainer(places)
            try await quit(artifact)
        }
        if places.hasContainer(in: fileSystem) {
            try await storeSettings(
                launch.preferences, domain: places.defaultsDomain(in: fileSystem),
                secrets: launch.secretValues)
        }
        try await open(places, arguments: launch.publicArguments)
    }

    /// `open` (a double-click) or, with `arguments`, `open -n APP --args …`.
    func open(_ places: MacAppLocations, arguments: [String]?) async throws {
        let path = places.installedApp.path
        _ = try await invoker().checked(
            arguments.map { configuration.commands.open(path, arguments: $0) }
                ?? configuration.commands.open(path),
            step: "launch", timeout: configuration.deadlines.limit(.launch),
            fix: "is \(path) there (run without --no-build once)?")
    }

    /// Waits, within the launch deadline, for macOS to make the sandboxed app's container.
    func waitForContainer(_ places: MacAppLocations) async throws {
        let end = clock.deadline(after: configuration.deadlines.limit(.launch))
        while !places.hasContainer(in: fileSystem) {
            if clock.instant() >= end {
                throw AppleDriverError(
                    .failed, step: "launch", device: configuration.label,
                    reason:
                        "the sandboxed app was opened but macOS made no container at \(places.container.path)",
                    fix:
                        "open \(places.installedApp.path) once by hand (allow it if macOS asks), then deploy again"
                )
            }
            try await clock.sleep(for: configuration.pollInterval)
        }
    }

    /// Merges the launch settings into the domain: export (a missing domain is empty), set the keys
    /// sent, remove the managed keys not sent, import from stdin — the app's own keys are kept.
    func storeSettings(
        _ preferences: [String: PropertyListValue], domain: String, secrets: Set<String>
    ) async throws {
        let limit = configuration.deadlines.terminate
        let exported = try await invoker().run(
            configuration.commands.exportDefaults(domain), step: "launch", timeout: limit)
        let plist = try LaunchPreferences.defaultsDomain(
            preferences, mergedInto: exported, removing: Self.launchKeys)
        _ = try await invoker(secrets: secrets).checked(
            configuration.commands.importDefaults(domain, plist: plist, secrets: secrets), step: "launch",
            timeout: limit, fix: "can this user write \(domain)'s preferences?")
    }

    /// Asks the app to quit, waits up to `quitGrace`, then kills it; fails only when it survives that.
    func quit(_ artifact: Artifact) async throws {
        let tool = invoker()
        let limit = configuration.deadlines.terminate
        // An app showing a dialog does not answer the quit event: osascript then waits for its own
        // timeout, so it is stopped at the grace period and the app killed.
        _ = try? await tool.run(
            configuration.commands.quit(artifact.bundleID), step: "launch", timeout: configuration.quitGrace)
        if try await waitUntilStopped(artifact, within: configuration.quitGrace) { return }
        // Exit 1 ("No matching processes") when it quit meanwhile: not an error.
        _ = try await tool.run(
            configuration.commands.kill(artifact.executable), step: "launch", timeout: limit)
        if try await waitUntilStopped(artifact, within: configuration.killGrace) { return }
        throw AppleDriverError(
            .failed, step: "launch", device: configuration.label,
            reason: "\(artifact.executable) is still running after a quit request and killall",
            fix: "quit it by hand (Activity Monitor), then deploy again")
    }

    /// AppleScript's answer for an application id LaunchServices has never registered (the first
    /// deploy: the copy was never opened): `Can’t get application id "…". (-1728)` (errAENoSuchObject),
    /// or LaunchServices' -10814 (kLSApplicationNotFoundErr). Such an app cannot be running.
    static func isUnknownApplication(_ stderr: String) -> Bool {
        stderr.contains("(-1728)") || stderr.contains("(-10814)")
    }

    /// Whether the app has stopped within `window`, asking every `pollInterval`.
    func waitUntilStopped(_ artifact: Artifact, within window: Duration) async throws -> Bool {
        let end = clock.deadline(after: window)
        while true {
            let output = try await invoker().run(
                configuration.commands.isRunning(artifact.bundleID), step: "launch",
                timeout: configuration.deadlines.terminate)
            if output.status == 0, output.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "false" {
                return true
            }
            if output.status != 0, Self.isUnknownApplication(output.stderr) { return true }
            if clock.instant() >= end { return false }
            try await clock.sleep(for: configuration.pollInterval)
        }
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        // Simulator apps crash into the same folder under the same name; theirs name CoreSimulator.
        let scanner = CrashReportScanner(
            executable: artifact.executable, since: since, simulatorUDID: nil, excludeSimulators: true,
            fileSystem: fileSystem)
        return try scanner.copyMatches(from: configuration.diagnosticReports, into: directory)
    }

    public func screenshot() async throws -> Data {
        throw AppleDriverError(
            .unavailable, step: "screenshot", device: configuration.label,
            reason: "no screenshot of the Mac is taken (screencapture shows the whole desktop)")
    }

    /// The unsandboxed app's files are the user's own (`~/Documents/ha-log.txt`); a sandboxed
    /// build's are in its container.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try requireMacOS("verify")
        return AppContainerFile.read(
            container: locations(artifact).dataFolder(in: fileSystem).path, relativePath: relativePath,
            in: fileSystem)
    }
}
