import DeviceSpec
import Foundation
import HADeployCore
import Logging
import MobileDevice
import SSHTransport
import VirtualDevice

/// A real deploy from a plan: artifacts (built, given, or demo), the Home Assistant preflight,
/// virtual devices when asked, then the executor.
public struct DeploySession: Sendable {
    public struct Settings: Sendable {
        public var artifact: URL?
        public var artifacts: URL?
        public var virtual: Bool
        public var stateDirectory: URL
        public var reportDirectory: URL?
        public var jobs: Int?
        public var failFast: Bool
        public var force: Bool

        public init(
            artifact: URL?, artifacts: URL?, virtual: Bool, stateDirectory: URL, reportDirectory: URL?,
            jobs: Int?,
            failFast: Bool, force: Bool
        ) {
            self.artifact = artifact
            self.artifacts = artifacts
            self.virtual = virtual
            self.stateDirectory = stateDirectory
            self.reportDirectory = reportDirectory
            self.jobs = jobs
            self.failFast = failFast
            self.force = force
        }
    }

    public var context: HADeployContext
    public var matrix: DeviceMatrix
    public var variables: [String: String]
    public var plan: DeployPlan
    public var settings: Settings
    public var reporter: any DeployReporter

    public init(
        context: HADeployContext, matrix: DeviceMatrix, variables: [String: String], plan: DeployPlan,
        settings: Settings, reporter: any DeployReporter
    ) {
        self.context = context
        self.matrix = matrix
        self.variables = variables
        self.plan = plan
        self.settings = settings
        self.reporter = reporter
    }

    public func run() async throws -> DeployReport {
        guard settings.virtual else { return try await runWithUSBHosts() }
        let devices = plan.devices.compactMap { matrix.device(id: $0.id) }
        let virtual = VirtualMatrix(matrix: matrix, devices: devices, variables: variables)
        var logger = Logger(label: "hadeploy.virtual")
        logger.logLevel = context.environment["HADEPLOY_DEBUG"] == nil ? .critical : .debug
        let (usbmuxd, address) = try await virtual.start(
            stateDirectory: settings.stateDirectory.appendingPathComponent("devices"), logger: logger)
        USBTransport.setUsbmuxdAddress(address)
        reporter.handle(.message("virtual devices up: USBMUXD_SOCKET_ADDRESS=\(address)"))
        let jailbroken = try await startJailbreakTwins()
        defer { for twin in jailbroken.values { twin.stop() } }
        do {
            let infos = await usbmuxd.devices()
            let ddi = try Self.virtualDeveloperImages(
                versions: infos.map(\.productVersion),
                in: settings.stateDirectory.appendingPathComponent("DeviceSupport"))
            let haConfigured =
                !(variables["HA_SERVER"] ?? "").isEmpty && !(variables["HA_TOKEN"] ?? "").isEmpty
            var rewritten = plan
            rewritten.devices = plan.devices.map { device in
                var device = device
                if device.transport == .ssh, jailbroken[device.id] != nil {
                    // The jailbroken twin answers over SSH, as the real iPad does.
                    device.host = "127.0.0.1"
                    device.fallbackTransport = nil
                    device.availability = .available
                    let twinDevice = matrix.device(id: device.id)
                    let keys = Set(
                        (twinDevice?.host?.references ?? []) + (twinDevice?.udid?.references ?? []))
                    device.unsetKeys.removeAll {
                        keys.contains($0) || (!haConfigured && ["HA_SERVER", "HA_TOKEN"].contains($0))
                    }
                    return device
                }
                guard let twin = infos.first(where: { $0.name == device.id }) else {
                    let reason =
                        virtual.skipped.first { $0.device.id == device.id }?.reason ?? "no virtual twin"
                    device.availability = .notOnThisHost(reason: reason)
                    return device
                }
                device.transport = .usb
                device.fallbackTransport = nil
                device.udid = twin.udid
                device.availability = .available
                let matrixDevice = matrix.device(id: device.id)
                let twinKeys = Set(
                    (matrixDevice?.udid?.references ?? []) + (matrixDevice?.host?.references ?? []))
                device.unsetKeys.removeAll {
                    twinKeys.contains($0) || (!haConfigured && ["HA_SERVER", "HA_TOKEN"].contains($0))
                }
                return device
            }
            if !haConfigured {
                reporter.handle(.message("HA_SERVER/HA_TOKEN not set: the dashboard check is skipped"))
            }
            let report = try await run(
                plan: rewritten, virtualDDI: ddi,
                sshTwins: jailbroken.mapValues { ($0.port, $0.keyPath, $0.knownHostsPath) })
            await usbmuxd.stop()
            return report
        } catch {
            await usbmuxd.stop()
            throw error
        }
    }

    /// USB devices plugged into another machine (`usb_host: ssh://user@nas`) are reached through a
    /// private socket forwarded to that machine's usbmuxd over SSH, filtered to the matrix's UDIDs.
    /// libusbmuxd takes one address per process, so a run serves one USB host: the local one, or
    /// exactly one remote host for all its USB devices.
    func runWithUSBHosts() async throws -> DeployReport {
        let usbDevices = plan.devices.filter { $0.transport == .usb && $0.availability == .available }
        let hosts = Set(usbDevices.compactMap(\.usbHost))
        guard let remote = hosts.first else { return try await run(plan: plan, virtualDDI: nil) }
        var rewritten = plan
        if hosts.count > 1 || usbDevices.contains(where: { $0.usbHost == nil }) {
            // Keep the local devices; the others need a run of their own.
            let keep = usbDevices.contains { $0.usbHost == nil } ? nil : remote
            rewritten.devices = plan.devices.map { device in
                var device = device
                if device.transport == .usb, device.usbHost != keep {
                    device.availability = .notOnThisHost(
                        reason:
                            "on USB host \(device.usbHost ?? "this machine"): deploy the devices of each USB host "
                            + "in a run of their own (`hadeploy \(device.id)`)")
                }
                return device
            }
            if keep == nil { return try await run(plan: rewritten, virtualDDI: nil) }
        }
        let udids = rewritten.devices.filter { $0.usbHost == remote && $0.availability == .available }
            .compactMap(\.udid).filter { !$0.hasPrefix("<unset") }
        reporter.handle(
            .message("USB host \(remote): forwarding its usbmuxd over SSH for \(udids.count) device(s)"))
        let forwarder = try await USBHostTunnel.open(remote, udids: udids, variables: variables)
        USBTransport.setUsbmuxdAddress(forwarder.socketAddress)
        do {
            let report = try await run(plan: rewritten, virtualDDI: nil)
            await forwarder.stop()
            return report
        } catch {
            await forwarder.stop()
            throw error
        }
    }

    /// Virtual devices mount any image; the files only need to exist where a real one would be.
    static func virtualDeveloperImages(versions: [String], in directory: URL) throws -> URL {
        for version in Set(versions) {
            let parts = version.split(separator: ".")
            let key = parts.prefix(2).joined(separator: ".") + (parts.count == 1 ? ".0" : "")
            let folder = directory.appendingPathComponent(key)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let image = folder.appendingPathComponent("DeveloperDiskImage.dmg")
            if !FileManager.default.fileExists(atPath: image.path) {
                try Data("hadeploy virtual developer disk image for iOS \(key)\n".utf8).write(to: image)
                try Data(repeating: 0x5A, count: 128).write(to: image.appendingPathExtension("signature"))
            }
        }
        return directory
    }

    /// Jailbroken twins for the SSH devices, when this machine can run them (root, the twin script).
    func startJailbreakTwins() async throws -> [String: JailbreakTwinProcess] {
        let ssh = plan.devices.filter { $0.transport == .ssh }
        guard !ssh.isEmpty,
            let script = JailbreakTwinProcess.script(
                environment: context.environment, projectDirectory: context.url(for: "."))
        else { return [:] }
        var twins: [String: JailbreakTwinProcess] = [:]
        for device in ssh {
            do {
                twins[device.id] = try await JailbreakTwinProcess.start(
                    script: script,
                    directory: settings.stateDirectory.appendingPathComponent("jailbreak/\(device.id)"),
                    runner: LiveProcessRunner())
                reporter.handle(.message("\(device.id): jailbroken twin (sshd in an iOS-like chroot) up"))
            } catch {
                for twin in twins.values { twin.stop() }
                throw error
            }
        }
        return twins
    }

    func run(
        plan: DeployPlan, virtualDDI: URL?,
        sshTwins: [String: (port: Int, key: String, knownHosts: String)] = [:]
    ) async throws -> DeployReport {
        let host = HostPlatform.current
        let source: ArtifactSource
        if let artifact = settings.artifact {
            source = .single(artifact)
        } else if let directory = settings.artifacts {
            source = .directory(directory)
        } else if settings.virtual
            && (!plan.builds.contains(where: \.enabled) || (host == .linux && matrix.buildHost == nil))
        {
            source = .demo(
                directory: settings.stateDirectory.appendingPathComponent("demo-apps"),
                bundleID: variables["BUNDLE_ID"].flatMap { $0.isEmpty ? nil : $0 }
                    ?? "com.example.hadashboard")
        } else if plan.builds.contains(where: \.enabled) {
            source = .build
        } else {
            throw NothingToInstall()
        }

        let server = plan.server.hasPrefix("<unset") ? nil : plan.server
        let token = variables["HA_TOKEN"].flatMap { $0.isEmpty ? nil : Secret($0) }
        var artifacts: [String: Artifact]
        if case .build = source {
            // A build takes minutes: what would stop the deploy anyway is found first. A wrong token or
            // a missing dashboard fails now, and a flavour whose devices all lack a setting is not built.
            if plan.verify, let server, let token {
                let early = try HomeAssistantVerifier(
                    server: server, token: token,
                    caFile: variables["HA_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
                reporter.handle(.message("preflight: checking Home Assistant at \(server) before building…"))
                do {
                    _ = try await early.preflight(dashboards: plan.devices.map(\.dashboard))
                } catch {
                    await early.close()
                    throw error
                }
                await early.close()
            }
            var buildPlan = plan
            buildPlan.builds = plan.builds.filter { build in
                plan.devices.contains {
                    $0.flavour == build.flavour && $0.availability == .available && $0.unsetKeys.isEmpty
                }
            }
            var builder = BuildCommandBuilder(variables: variables, version: plan.version)
            if let tool = context.environment["HADEPLOY_XCODEBUILD"] { builder.tools["xcodebuild"] = tool }
            if let tool = context.environment["HADEPLOY_XCODEGEN"] { builder.tools["xcodegen"] = tool }
            let reporter = self.reporter
            artifacts = try await BuildRunner(context: context, matrix: matrix, builder: builder, host: host)
                .build(buildPlan) { reporter.handle(.message($0)) }
        } else {
            artifacts = try source.artifacts(for: plan, matrix: matrix, host: host)
            if case .demo = source {
                reporter.handle(.message("using generated demo app bundles (virtual devices only)"))
            }
        }

        var registry = DriverRegistry(
            matrix: matrix, variables: variables, host: host,
            usbmuxdAddress: context.environment["USBMUXD_SOCKET_ADDRESS"],
            stateDirectory: settings.stateDirectory, output: context.output)
        registry.developerImageOverride = virtualDDI.map { [$0] }
        registry.sshTwins = sshTwins
        let drivers = registry
        // Preflight once per run, before any device is touched.
        var verifier: HomeAssistantVerifier?
        var skipped = "verification skipped (--no-verify)"
        if plan.verify {
            if let server, let token {
                let candidate = try HomeAssistantVerifier(
                    server: server, token: token,
                    caFile: variables["HA_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
                reporter.handle(.message("preflight: checking Home Assistant at \(server)…"))
                for note in try await candidate.preflight(dashboards: plan.devices.map(\.dashboard)) {
                    reporter.handle(.message("preflight: \(note)"))
                }
                verifier = candidate
            } else {
                skipped = "verification skipped: HA_SERVER and HA_TOKEN are not both set"
            }
        }
        let environment = DeployEnvironment(
            driver: { try drivers.driver(for: $0) }, verifier: verifier,
            verificationSkippedReason: skipped,
            artifacts: artifacts, reporter: reporter, reportDirectory: settings.reportDirectory,
            lockDirectory: Self.lockDirectory(context.environment),
            jobs: settings.jobs, failFast: settings.failFast, force: settings.force)
        let report = await DeployExecutor(plan: plan, environment: environment).run()
        await verifier?.close()
        return report
    }

    /// Per user, not per checkout: two runs from different directories still see each other's locks.
    public static func lockDirectory(_ environment: [String: String]) -> URL {
        let base =
            environment["XDG_CACHE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? environment["HOME"].map { URL(fileURLWithPath: $0).appendingPathComponent(".cache") }
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("hadeploy/locks")
    }
}

/// `--no-build` without saying what to install.
public struct NothingToInstall: Error, CustomStringConvertible, ExitStatusProviding {
    public var description: String {
        "--no-build needs something to install: --artifact PATH, --artifacts DIR, or --virtual for demo bundles"
    }
    public var exitStatus: ExitStatus { .usage }
}

/// The SSH tunnel to a USB host's usbmuxd (`usb_host: ssh://user@nas[/path/to/usbmuxd]`), logging in
/// as `SSHLogin` says (`USB_HOST_SSH_KEY`, the agent, `~/.ssh` keys) and checking the host key against
/// hadeploy's known_hosts.
enum USBHostTunnel {
    static func open(_ remote: String, udids: [String], variables: [String: String]) async throws
        -> UsbmuxForwarder
    {
        var config = try SSHConnectionConfig.parse(
            url: remote,
            authentication: SSHLogin.authentication(keyVariable: "USB_HOST_SSH_KEY", variables: variables),
            name: remote)
        config.knownHostsPath = SSHLogin.knownHostsPath(variables)
        let path = URLComponents(string: remote)?.path ?? ""
        return try await UsbmuxForwarder.start(
            ssh: config, remoteSocket: path.isEmpty || path == "/" ? "/var/run/usbmuxd" : path,
            allowedUDIDs: udids)
    }
}
