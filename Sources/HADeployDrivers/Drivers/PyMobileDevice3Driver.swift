import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import MobileDevice

/// What an iOS 17+ device on this host can and cannot do through pymobiledevice3, in words.
public struct PyMobileDevice3Readiness: Sendable, Hashable {
    /// `pymobiledevice3 version`'s answer; nil when it is not installed.
    public var version: String?
    public var tunneld: TunneldState
    /// What is missing for launching the app; nil when nothing is.
    public var launch: String?
    /// What is missing for screenshots; nil when nothing is.
    public var screenshot: String?
}

/// Drives an iOS 17+ device from Linux with pymobiledevice3: install over usbmuxd, launch with
/// arguments and screenshots through pymobiledevice3's own userspace tunnel (no root, no tunneld),
/// or the one a running `tunneld` keeps to the device when it has one.
public actor PyMobileDevice3Driver: DeviceDriver {
    public struct Configuration: Sendable {
        public var label: String
        public var udid: String
        public var commands: PyMobileDevice3Commands
        public var scratchDirectory: URL
        public var deadlines: DriverDeadlines
        /// pymobiledevice3's console script and its interpreter, for launches (see
        /// `PyMobileDevice3Commands.launch`); nil: found on PATH and read from the script's `#!` line.
        public var launcher: PyMobileDevice3Launcher?
        /// Serve the steps through one helper process for the run (`PyMobileDevice3Helper`) rather
        /// than one pymobiledevice3 process per step. Off for one-off questions (`hadeploy devices`).
        public var helper: Bool

        public init(
            label: String, udid: String, commands: PyMobileDevice3Commands = .init(), scratchDirectory: URL,
            deadlines: DriverDeadlines = .init(), launcher: PyMobileDevice3Launcher? = nil,
            helper: Bool = true
        ) {
            self.label = label
            self.udid = udid
            self.commands = commands
            self.scratchDirectory = scratchDirectory
            self.deadlines = deadlines
            self.launcher = launcher
            self.helper = helper
        }
    }

    static let installHint = "`pip install pymobiledevice3`"
    /// What a failed mount needs when pymobiledevice3 could not fetch or sign the image.
    static let mountFix =
        "connect this host to the internet once per device boot: pymobiledevice3 mounter auto-mount needs "
        + "Apple's signing server"

    public nonisolated let configuration: Configuration
    let runner: any ProcessRunner
    let tunneld: any TunneldProbing
    nonisolated let fileSystem: any FileSystem
    var installedVersion: String??
    var helperState: HelperState = .untried
    var helperStarts = 0
    /// Why the helper is not used, said by the first step that goes without it (not by `connect`,
    /// whose warm-up may be the one that found out).
    var helperFallbackNote: String?
    /// What the current step will say besides its result (`takeStepNote`).
    var notes: [String] = []

    public init(
        configuration: Configuration, runner: any ProcessRunner, fileSystem: any FileSystem,
        tunneld: any TunneldProbing = TunneldProbe()
    ) {
        self.configuration = configuration
        self.runner = runner
        self.fileSystem = fileSystem
        self.tunneld = tunneld
    }

    var scratch: ScratchFolder {
        ScratchFolder(fileSystem: fileSystem, directory: configuration.scratchDirectory)
    }

    /// The driver for device `udid` behind `route`'s usbmuxd: every command talks to that usbmuxd.
    public static func make(
        label: String, udid: String, route: USBRoute?, executable: String, runner: any ProcessRunner,
        fileSystem: any FileSystem, scratchDirectory: URL, deadlines: DriverDeadlines = .init(),
        helper: Bool = true
    ) -> PyMobileDevice3Driver {
        // Plain output (no colours, no boxes) in whatever hadeploy reports of it.
        var environment = ["NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200"]
        switch route {
        case _ where route != nil && USBTransport.relayAddress != nil:
            // hadeploy's own usbmuxd in this process: the route's devices and the Wi-Fi ones it found.
            environment["USBMUXD_SOCKET_ADDRESS"] = Self.pythonUsbmuxdAddress(USBTransport.relayAddress ?? "")
        case .local(let address?), .virtual(let address):
            environment["USBMUXD_SOCKET_ADDRESS"] = Self.pythonUsbmuxdAddress(address)
        default: break
        }
        return PyMobileDevice3Driver(
            configuration: Configuration(
                label: label, udid: udid,
                commands: PyMobileDevice3Commands(executable: executable, environment: environment),
                scratchDirectory: scratchDirectory, deadlines: deadlines, helper: helper),
            runner: runner, fileSystem: fileSystem)
    }

    /// One line for `hadeploy devices`: what launch and screenshots need, there or missing — Python,
    /// pymobiledevice3's version, Developer Mode, the personalized image.
    public func summary() async -> String {
        guard let version = try? await version(), !version.isEmpty else {
            return "missing: pymobiledevice3 (\(Self.installHint); no root, no tunneld needed)"
        }
        let limit = configuration.deadlines.limit(.connect)
        var parts: [String] = []
        if let launcher = try? configuration.launcher
            ?? PyMobileDevice3Launcher.locate(
                configuration.commands.executable, runner: runner, fileSystem: fileSystem),
            let output = try? await invoker().run(
                ProcessCommand(
                    launcher.interpreter[0], Array(launcher.interpreter.dropFirst()) + ["--version"]),
                step: "devices", timeout: limit),
            output.status == 0
        {
            let python = (output.stdout + output.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
            parts.append(python.isEmpty ? "Python" : python)
        } else {
            parts.append("Python: not found for \(configuration.commands.executable)")
        }
        parts.append("pymobiledevice3 \(version)")
        let mode = try? await invoker().run(
            configuration.commands.developerModeStatus(udid: configuration.udid), step: "devices",
            timeout: limit)
        switch mode.map({ ($0.status, $0.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
        case (0, "true")?: parts.append("Developer Mode on")
        case (0, "false")?:
            parts.append("missing: Developer Mode (Settings > Privacy & Security > Developer Mode)")
        default: parts.append("Developer Mode: no answer")
        }
        switch try? await imageMounted() {
        case true?: parts.append("image mounted")
        case false?:
            parts.append("missing: image mounted (the deploy's mount step auto-mounts it; needs internet)")
        case nil: parts.append("image: no answer")
        }
        return parts.joined(separator: ", ")
    }

    /// libimobiledevice's `UNIX:/path` as pymobiledevice3 reads it (a path; `HOST:PORT` for TCP).
    static func pythonUsbmuxdAddress(_ address: String) -> String {
        address.uppercased().hasPrefix("UNIX:") ? String(address.dropFirst(5)) : address
    }

    func invoker(secrets: Set<String> = []) -> ToolInvoker {
        ToolInvoker(
            runner: runner, tool: "pymobiledevice3", device: configuration.label,
            installHint: Self.installHint,
            secrets: secrets)
    }

    /// `step needs pymobiledevice3 ...`: the words for a missing tool, per step.
    static func missing(_ step: String, tunnel: Bool) -> (reason: String, fix: String) {
        tunnel
            ? (
                "\(step) needs pymobiledevice3",
                "\(installHint) (its own userspace tunnel: no root, no tunneld)"
            )
            : (
                "\(step) needs pymobiledevice3",
                "\(installHint), or use the usb transport (libimobiledevice) to install"
            )
    }

    /// Whether pymobiledevice3 is installed (asked once), and its version.
    func version() async throws -> String? {
        if let installedVersion { return installedVersion }
        // The helper says its pymobiledevice3's version when it is up: no process of its own for it.
        if let helper = try await helper(step: .mount) {
            installedVersion = .some(helper.hello.version)
            return helper.hello.version
        }
        let answer: String?
        do {
            let output = try await invoker().run(
                configuration.commands.version(), step: "connect",
                timeout: configuration.deadlines.limit(.connect))
            answer = output.status == 0 ? output.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : nil
        } catch let error as AppleDriverError where error.kind == .toolMissing {
            answer = nil
        }
        installedVersion = .some(answer)
        return answer
    }

    /// What launch and screenshot need that is not there, without touching the device.
    public func readiness() async -> PyMobileDevice3Readiness {
        let version = try? await version()
        let state = await tunneld.state()
        let missing = (try? await tunnelProblem(step: "launch", version: version, state: state)) ?? nil
        let screenshot = (try? await tunnelProblem(step: "screenshot", version: version, state: state)) ?? nil
        return PyMobileDevice3Readiness(
            version: version, tunneld: state, launch: missing, screenshot: screenshot)
    }

    /// The sentence saying what `step` lacks (pymobiledevice3 itself), or nil. The tunnel needs
    /// nothing else: pymobiledevice3 builds its own in user space; tunneld is only used when it runs.
    func tunnelProblem(step: String, version: String?, state: TunneldState) async throws -> String? {
        guard version != nil else {
            let (reason, fix) = Self.missing(step, tunnel: true)
            return "\(reason): \(fix)"
        }
        return nil
    }

    /// Throws the precise "what is missing" error before a tunnel step, else the tunnel to use: a
    /// running tunneld's when it has one to this device, pymobiledevice3's userspace tunnel otherwise.
    func requireTunnel(_ step: String) async throws -> PyMobileDevice3Commands.TunnelRoute {
        let version = try await version()
        let state = await tunneld.state()
        if let problem = try await tunnelProblem(step: step, version: version, state: state) {
            throw AppleDriverError(
                version == nil ? .toolMissing : .unavailable, step: step, device: configuration.label,
                reason: problem)
        }
        if case .running(let udids) = state, udids.contains(configuration.udid) { return .tunneld }
        return .userspace
    }

    public func connect() async throws -> ConnectedDevice {
        let output = try await invoker().checked(
            configuration.commands.listDevices(), step: "connect",
            timeout: configuration.deadlines.limit(.connect),
            missing: Self.missing("connect", tunnel: false))
        let devices: [UsbmuxDevice]
        do {
            devices = try PyMobileDevice3Parser.devices(output.standardOutput)
        } catch {
            throw AppleDriverError(
                .unexpectedOutput, step: "connect", device: configuration.label, reason: "\(error)")
        }
        guard let device = devices.first(where: { $0.udid == configuration.udid }) else {
            throw AppleDriverError(
                .unavailable, step: "connect", device: configuration.label,
                reason: "usbmuxd does not see \(configuration.udid)"
                    + (devices.isEmpty
                        ? " (no devices at all)"
                        : " (it sees \(devices.map(\.udid).joined(separator: ", ")))"),
                fix: "plug it in, unlock it and tap Trust; check with `pymobiledevice3 usbmux list`",
                isTransient: true)
        }
        return ConnectedDevice(
            udid: device.udid, name: device.name ?? configuration.label, productType: device.productType,
            iosVersion: device.productVersion ?? "", arch: nil)
    }

    /// Whether the personalized Developer Disk Image is mounted (`mounter lookup Personalized`).
    /// `warm`: the helper builds the developer tunnel meanwhile when it is, for the launch to come.
    public func imageMounted(warm: Bool = false) async throws -> Bool {
        if let helper = try await helper(step: .mount),
            let reply = try await call(
                helper, "lookup", ["imageType": "Personalized", "warm": warm], step: .mount)
        {
            return reply.result["mounted"] as? Bool ?? false
        }
        let output = try await invoker().checked(
            configuration.commands.lookupPersonalized(udid: configuration.udid), step: "mount",
            timeout: configuration.deadlines.limit(.mount),
            missing: Self.missing("mounting the Developer Disk Image", tunnel: false))
        let printed = output.stdout + output.stderr
        return !output.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            && !printed.contains("is not mounted")
    }

    /// Mounts the Developer Disk Image that launch and screenshot need, when it is not mounted yet.
    /// Looked up first: `auto-mount` fetches the image and asks Apple's signing server before it checks,
    /// so it fails without internet even on a device whose image is mounted.
    public func prepare() async throws {
        if try await imageMounted(warm: true) { return }
        let output = try await invoker().run(
            configuration.commands.autoMount(udid: configuration.udid), step: "mount",
            timeout: configuration.deadlines.limit(.mount),
            missing: Self.missing("mounting the Developer Disk Image", tunnel: false))
        guard output.status == 0 else {
            let said =
                (output.stderr + "\n" + output.stdout).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.last { !$0.isEmpty } ?? ""
            let shown = said.count > 160 ? String(said.prefix(157)) + "..." : said
            throw AppleDriverError(
                .failed, step: "mount", device: configuration.label,
                reason:
                    "the Developer Disk Image is not mounted and pymobiledevice3 mounter auto-mount failed"
                    + (shown.isEmpty ? "" : " (\(shown))"),
                fix: Self.mountFix)
        }
        // The device lists its developer services anew now: a tunnel built before would not have them.
        if case .running(let helper) = helperState {
            _ = try await call(helper, "forgetTunnel", step: .mount)
        }
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        let size = DriverDeadlines.size(of: artifact.path, in: fileSystem)
        progress(TransferProgress(bytesDone: 0, bytesTotal: size, percent: 0, phase: "installing"))
        let tool = invoker()
        _ = try await tool.checked(
            configuration.commands.install(udid: configuration.udid, app: artifact.path), step: "install",
            timeout: configuration.deadlines.install(bytes: size),
            missing: Self.missing("install", tunnel: false))
        // Check the build really landed: installers that exit 0 on failure are a known plague.
        let listed = try await tool.checked(
            configuration.commands.listApps(udid: configuration.udid), step: "install",
            timeout: configuration.deadlines.limit(.connect))
        let apps: [String: InstalledApp]
        do {
            apps = try PyMobileDevice3Parser.apps(listed.standardOutput)
        } catch {
            throw AppleDriverError(
                .unexpectedOutput, step: "install", device: configuration.label, reason: "\(error)")
        }
        guard let app = apps[artifact.bundleID], app.buildVersion == artifact.buildNumber else {
            let found = apps[artifact.bundleID].map { "build \($0.buildVersion ?? "?")" } ?? "nothing"
            throw AppleDriverError(
                .failed, step: "install", device: configuration.label,
                reason:
                    "pymobiledevice3 reported success, but the device has \(found) for \(artifact.bundleID), "
                    + "not build \(artifact.buildNumber)")
        }
        progress(TransferProgress(bytesDone: size, bytesTotal: size, percent: 100, phase: "installed"))
        return .installed
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        let route = try await requireTunnel("launch")
        let (arguments, secrets) = (launch.arguments, launch.secretValues)
        // The helper's own tunnel unless a tunneld already keeps one to the device. The argument
        // list, the access token in it, goes over the helper's stdin.
        if route == .userspace, let helper = try await helper(step: .launch),
            let reply = try await call(
                helper, "launch",
                [
                    "bundleID": artifact.bundleID, "arguments": arguments, "environment": [String: String](),
                    "killExisting": true,
                ], step: .launch, secrets: secrets)
        {
            guard reply.result["pid"] as? Int != nil else {
                throw AppleDriverError(
                    .unexpectedOutput, step: "launch", device: configuration.label,
                    reason: "pymobiledevice3 did not report a process id for \(artifact.bundleID)")
            }
            return
        }
        let launcher: PyMobileDevice3Launcher
        do {
            launcher = try locateLauncher()
        } catch let problem as PyMobileDevice3Launcher.Problem {
            throw AppleDriverError(
                .unavailable, step: "launch", device: configuration.label, reason: problem.reason,
                fix: "install pymobiledevice3 with pip or pipx (a Python console script), or set "
                    + "PYMOBILEDEVICE3 to one: hadeploy hands it the access token on stdin, never on a command line"
            )
        }
        let output = try await invoker(secrets: secrets).checked(
            configuration.commands.launch(
                udid: configuration.udid, bundleID: artifact.bundleID, arguments: arguments, secrets: secrets,
                interpreter: launcher.interpreter, script: launcher.script, route: route),
            step: "launch", timeout: configuration.deadlines.limit(.launch),
            missing: Self.missing("launch", tunnel: true),
            fix: "run `pymobiledevice3 mounter auto-mount` if the Developer Disk Image is not mounted")
        guard PyMobileDevice3Parser.launchedProcessID(output.stdout) != nil else {
            throw AppleDriverError(
                .unexpectedOutput, step: "launch", device: configuration.label,
                reason: "pymobiledevice3 did not report a process id for \(artifact.bundleID)")
        }
    }

    /// The interpreter and console script that run pymobiledevice3: the configured one, or the one
    /// found on PATH (the helper and the per-step launch both start from it).
    nonisolated func locateLauncher() throws -> PyMobileDevice3Launcher {
        try configuration.launcher
            ?? PyMobileDevice3Launcher.locate(
                configuration.commands.executable, runner: runner, fileSystem: fileSystem)
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let pulled = try scratch.newFolder("hadeploy-crashes")
        defer { scratch.remove(pulled) }
        _ = try await invoker().checked(
            configuration.commands.pullCrashReports(udid: configuration.udid, into: pulled.path),
            step: "crash_check",
            timeout: configuration.deadlines.limit(.crashCheck),
            missing: Self.missing("the crash check", tunnel: false))
        let scanner = CrashReportScanner(
            executable: artifact.executable, since: since, simulatorUDID: nil, fileSystem: fileSystem)
        return try scanner.copyMatches(from: pulled, into: directory)
    }

    public func screenshot() async throws -> Data {
        let route = try await requireTunnel("screenshot")
        if route == .userspace, let helper = try await helper(step: .screenshot),
            let reply = try await call(helper, "screenshot", step: .screenshot)
        {
            return try ScreenshotFile.check(
                Data(base64Encoded: reply.result["png"] as? String ?? "") ?? Data(), step: "screenshot",
                device: configuration.label)
        }
        let commands = configuration.commands
        let udid = configuration.udid
        return try await scratch.screenshot(
            invoker(), timeout: configuration.deadlines.limit(.screenshot),
            missing: Self.missing("screenshot", tunnel: true)
        ) { commands.screenshot(udid: udid, to: $0, route: route) }
    }
}

extension PyMobileDevice3Driver {
    /// pymobiledevice3 as a run finds it: `PYMOBILEDEVICE3` when set, else the pinned venv of this
    /// checkout (`.venv-pmd3`, scripts/pmd3-venv.sh) when there is one, else `pymobiledevice3` on PATH.
    public static func executable(
        variables: [String: String], checkout: URL, fileSystem: any FileSystem
    ) -> String {
        if let named = variables["PYMOBILEDEVICE3"], !named.isEmpty { return named }
        let venv = checkout.appendingPathComponent(".venv-pmd3/bin/pymobiledevice3").path
        return fileSystem.isExecutableFile(atPath: venv) ? venv : "pymobiledevice3"
    }
}
