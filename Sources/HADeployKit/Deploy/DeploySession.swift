import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HADeployReporting
import Logging
import MobileDevice
import SSHTransport

/// A real deploy of a plan, exactly as planned: artifacts (built, given, or demo), the Home
/// Assistant preflight, then the executor. libusbmuxd reads one usbmuxd address per process, so the
/// devices of the first USB route run here and every other route runs in a worker process of its own
/// (hadeploy itself, started through `Settings.worker`), whose events and results join this run's.
public struct DeploySession: Sendable {
    public struct Settings: Sendable {
        public var artifact: URL?
        public var artifacts: URL?
        /// `{"<flavour>": "<path>"}` from the hadeploy that started this worker.
        public var artifactManifest: URL?
        /// Virtual twins: demo bundles when nothing can be built, and any Developer Disk Image mounts.
        public var virtual: Bool
        public var developerImages: URL?
        public var stateDirectory: URL
        public var reportDirectory: URL?
        /// false in a worker: its parent writes the report (the worker adds screenshots and crash logs).
        public var writeReport: Bool
        public var jobs: Int?
        public var failFast: Bool
        public var force: Bool
        /// Starts a worker for other USB routes; nil deploys every route here (one must suffice).
        public var worker: WorkerLauncher?
        /// Jailbroken twins of SSH devices (`--virtual`), by device id.
        public var jailbrokenTwins: [String: JailbrokenTwinEndpoint] = [:]
        /// Where each device's installed bundle id is remembered for `rollback` (nil: not at all, as
        /// for virtual twins, which are gone after the run).
        public var deployRecords: DeployRecords?
        /// Each screenshot against the device's baseline (nil: screenshots are not compared).
        public var screenshotReview: ScreenshotReview?

        public init(
            artifact: URL?, artifacts: URL?, artifactManifest: URL? = nil, virtual: Bool,
            developerImages: URL? = nil, stateDirectory: URL, reportDirectory: URL?, writeReport: Bool = true,
            jobs: Int?, failFast: Bool, force: Bool, worker: WorkerLauncher? = nil
        ) {
            self.artifact = artifact
            self.artifacts = artifacts
            self.artifactManifest = artifactManifest
            self.virtual = virtual
            self.developerImages = developerImages
            self.stateDirectory = stateDirectory
            self.reportDirectory = reportDirectory
            self.writeReport = writeReport
            self.jobs = jobs
            self.failFast = failFast
            self.force = force
            self.worker = worker
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

    /// The usbmuxd routes the plan's runnable devices need, in plan order.
    var routes: [USBRoute] {
        var seen: [USBRoute] = []
        for device in plan.devices where device.availability == .available {
            if let route = device.backend.usbRoute, !seen.contains(route) { seen.append(route) }
        }
        return seen
    }

    public func run() async throws -> DeployReport {
        let (inspected, checked) = try await prepareArtifacts()
        // Installs over SSH take a bundle: each .ipa is unpacked once, now, and removed at the end.
        let staging = try ArtifactStaging.prepare(
            inspected,
            needingBundles: Set(
                plan.devices.filter {
                    guard $0.availability == .available, case .ssh = $0.backend else { return false }
                    return true
                }.map(\.flavour)),
            under: settings.stateDirectory.appendingPathComponent("artifacts"), runID: plan.deployID)
        defer { staging.remove() }
        let artifacts = staging.artifacts
        let routes = self.routes
        // The first route runs here; the others in workers.
        let here = routes.first
        let elsewhere = Array(routes.dropFirst())
        if !elsewhere.isEmpty && settings.worker == nil {
            throw WorkerUnavailable(routes: elsewhere)
        }
        var workers: [String: WorkerGroup] = [:]
        if let launcher = settings.worker, !elsewhere.isEmpty {
            let manifest = try writeManifest(artifacts)
            for route in elsewhere {
                let ids = plan.devices.filter {
                    $0.availability == .available && $0.backend.usbRoute == route
                }
                .map(\.id)
                workers["\(route)"] = WorkerGroup(
                    route: route, devices: ids, command: launcher.command(route, ids, manifest))
            }
        }

        var tunnel: UsbmuxForwarder?
        switch here {
        case .local(let address)?:
            if let address { USBTransport.setUsbmuxdAddress(address) }
        case .virtual(let address)?:
            USBTransport.setUsbmuxdAddress(address)
        case .usbHost(let remote)?:
            let udids = plan.devices.filter { $0.backend.usbRoute == here }.compactMap { $0.udid?.value }
            reporter.handle(
                .message("USB host \(remote): forwarding its usbmuxd over SSH for \(udids.count) device(s)"))
            let forwarder = try await USBHostTunnel.open(
                remote, udids: udids, variables: variables, fileSystem: context.fileSystem)
            USBTransport.setUsbmuxdAddress(forwarder.socketAddress)
            tunnel = forwarder
        case nil:
            break
        }
        do {
            let report = try await execute(
                artifacts: artifacts, workers: Array(workers.values), preflightDone: checked)
            await tunnel?.stop()
            return report
        } catch {
            await tunnel?.stop()
            throw error
        }
    }

    /// The artifact for each flavour: given, generated for virtual twins, or built (after the
    /// checks that would stop the deploy anyway, so a wrong token costs no build).
    /// Also says whether the Home Assistant preflight already ran (before a build): it runs once.
    func prepareArtifacts() async throws -> (artifacts: [String: Artifact], preflightDone: Bool) {
        let host = HostPlatform.current
        let source: ArtifactSource
        if let manifest = settings.artifactManifest {
            source = .manifest(manifest)
        } else if let artifact = settings.artifact {
            source = .single(artifact)
        } else if let directory = settings.artifacts {
            source = .directory(directory)
        } else if settings.virtual
            && (!plan.builds.contains(where: \.enabled) || (host == .linux && matrix.buildHost == nil))
        {
            source = .demo(
                directory: settings.stateDirectory.appendingPathComponent("demo-apps"),
                bundleID: variables["BUNDLE_ID"].flatMap { $0.isEmpty ? nil : $0 }
                    ?? DemoAppBuilder.defaultBundleID)
        } else if plan.builds.contains(where: \.enabled) {
            source = .build
        } else {
            throw NothingToInstall()
        }
        guard case .build = source else {
            let artifacts = try source.artifacts(for: plan, matrix: matrix, host: host)
            if case .demo = source {
                reporter.handle(.message("using generated demo app bundles (virtual devices only)"))
            }
            return (artifacts, false)
        }
        // A build takes minutes: what would stop the deploy anyway is found first.
        var preflightDone = false
        if plan.verify, let verifier = try makeVerifier() {
            reporter.handle(.message("preflight: checking Home Assistant at \(plan.server) before building…"))
            do {
                _ = try await verifier.preflight(dashboards: expectedDashboards)
            } catch {
                await verifier.close()
                throw error
            }
            await verifier.close()
            preflightDone = true
        }
        var buildPlan = plan
        // A flavour whose devices all lack a setting is not built.
        buildPlan.builds = plan.builds.filter { build in
            plan.devices.contains {
                $0.flavour == build.flavour && $0.availability == .available && $0.unsetKeys.isEmpty
            }
        }
        let reporter = self.reporter
        let built = try await BuildRunner(
            context: context, matrix: matrix,
            builder: BuildCommandBuilder.resolved(variables: variables, version: plan.version),
            host: host
        ).build(buildPlan) { reporter.handle(.message($0)) }
        return (built, preflightDone)
    }

    /// The dashboards the devices will be told to open (nil: the default dashboard). With none named,
    /// the default dashboard is checked: the server and the token are checked either way.
    var expectedDashboards: [String?] {
        let named = plan.devices.filter { $0.availability == .available }.compactMap(\.dashboard.expected)
        return named.isEmpty ? [nil] : named
    }

    func makeVerifier() throws -> HomeAssistantVerifier? {
        guard let server = plan.server.value, let token = plan.accessToken else { return nil }
        return try HomeAssistantVerifier(
            server: server, token: token, caFile: variables["HA_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
    }

    func execute(artifacts: [String: Artifact], workers: [WorkerGroup], preflightDone: Bool) async throws
        -> DeployReport
    {
        var registry = DriverRegistry(
            matrix: matrix, variables: variables, host: HostPlatform.current,
            stateDirectory: settings.stateDirectory, runner: context.runner)
        registry.developerImageOverride = settings.developerImages.map { [$0] }
        registry.sshTwins = settings.jailbrokenTwins
        let drivers = registry
        // Preflight once per run, before any device is touched.
        var verifier: HomeAssistantVerifier?
        if plan.verify {
            if let candidate = try makeVerifier() {
                if !preflightDone {
                    reporter.handle(.message("preflight: checking Home Assistant at \(plan.server)…"))
                    for note in try await candidate.preflight(dashboards: expectedDashboards) {
                        reporter.handle(.message("preflight: \(note)"))
                    }
                }
                verifier = candidate
            }
        }
        var environment = DeployEnvironment(
            driver: { try drivers.driver(for: $0) }, verifier: verifier,
            verificationSkippedReason: plan.verificationSkipped
                ?? "verification skipped: HA_SERVER and HA_TOKEN are not both set",
            artifacts: artifacts, reporter: reporter, reportDirectory: settings.reportDirectory,
            writeReport: settings.writeReport,
            lockDirectory: Self.lockDirectory(context),
            jobs: settings.jobs, failFast: settings.failFast, force: settings.force, now: context.now,
            fileSystem: context.fileSystem, workers: workers, runner: context.runner)
        environment.screenshotReview = settings.screenshotReview
        let report = await DeployExecutor(plan: plan, environment: environment).run()
        await verifier?.close()
        do {
            try settings.deployRecords?.record(report, plan: plan, artifacts: artifacts)
        } catch {
            reporter.handle(
                .message(
                    "warning: could not remember the deployed bundle ids for rollback: \(SystemErrorText.message(error))"
                ))
        }
        return report
    }

    /// `{"<flavour>": "<path>"}` for the workers, in a private folder.
    func writeManifest(_ artifacts: [String: Artifact]) throws -> URL {
        let folder = settings.stateDirectory.appendingPathComponent("workers")
        try context.fileSystem.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = folder.appendingPathComponent("artifacts-\(plan.deployID).json")
        let paths = artifacts.mapValues { URL(fileURLWithPath: $0.path).standardizedFileURL.path }
        try JSONEncoder().encode(paths).write(to: file, options: .atomic)
        return file
    }

    /// Per user, not per checkout: two runs from different directories still see each other's locks.
    public static func lockDirectory(_ context: HADeployContext) -> URL {
        let environment = context.environment
        let base =
            environment["XDG_CACHE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? environment["HOME"].map { URL(fileURLWithPath: $0).appendingPathComponent(".cache") }
            ?? context.fileSystem.temporaryDirectory
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

/// Several USB routes in a run, and no way to start a worker for the others.
public struct WorkerUnavailable: Error, CustomStringConvertible, ExitStatusProviding {
    public var routes: [USBRoute]
    public var description: String {
        "this run needs a worker process for \(routes.map(\.description).joined(separator: ", ")), "
            + "and none can be started here; deploy those devices in a run of their own"
    }
    public var exitStatus: ExitStatus { .failure }
}

/// The SSH tunnel to a USB host's usbmuxd (`usb_host: ssh://user@nas[/path/to/usbmuxd]`), logging in
/// as `SSHLogin` says (`USB_HOST_SSH_KEY`, the agent, `~/.ssh` keys) and checking the host key against
/// hadeploy's known_hosts.
enum USBHostTunnel {
    static func open(
        _ remote: String, udids: [String], variables: [String: String], fileSystem: any FileSystem
    ) async throws
        -> UsbmuxForwarder
    {
        let config = try SSHConnectionConfig.parse(
            url: remote,
            authentication: SSHLogin.authentication(
                keyVariable: "USB_HOST_SSH_KEY", variables: variables, fileSystem: fileSystem),
            knownHostsPath: SSHLogin.knownHostsPath(variables), name: remote)
        let path = URLComponents(string: remote)?.path ?? ""
        return try await UsbmuxForwarder.start(
            ssh: config, remoteSocket: path.isEmpty || path == "/" ? "/var/run/usbmuxd" : path,
            allowedUDIDs: udids)
    }
}
