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

/// A real deploy of a plan, exactly as planned and from the plan alone: artifacts (built, given, or
/// demo, as the plan says), the Home Assistant preflight, then the executor, every device in this
/// process (every usbmuxd route of the run muxed into hadeploy's own: `RunRoutes`).
public struct DeploySession: Sendable {
    /// Builds the plan's builds (`ArtifactPlan.build`): the CLI's, which has the checkout.
    public typealias Builder =
        @Sendable (DeployPlan, _ message: @escaping @Sendable (String) -> Void) async throws
        -> [String: Artifact]

    public struct Settings: Sendable {
        /// The environment the plan's secrets are read from (`env:HA_TOKEN`, SSH passwords), at the
        /// last moment.
        public var environment: [String: String]
        public var reportDirectory: URL?
        public var jobs: Int?
        public var failFast: Bool
        /// `--wait-unlock`: how long a locked device is waited for (nil: not).
        public var waitUnlock: Duration?
        /// Runs the builds when the plan builds; nil: a plan that builds is refused.
        public var build: Builder?
        /// Where each device's installed bundle id is remembered for `rollback` (nil: not at all, as
        /// for virtual twins, which are gone after the run).
        public var deployRecords: DeployRecords?
        /// Each screenshot against the device's baseline (nil: screenshots are not compared).
        public var screenshotReview: ScreenshotReview?
        /// Keep each verified device's screenshot with its deploy record even without a report
        /// directory (`deploy --publish`: Home Assistant shows it); taken into a private folder of the
        /// run's, removed once recorded.
        public var keepScreenshots = false

        public init(
            environment: [String: String], reportDirectory: URL?, jobs: Int?,
            failFast: Bool, build: Builder? = nil
        ) {
            self.environment = environment
            self.reportDirectory = reportDirectory
            self.jobs = jobs
            self.failFast = failFast
            self.build = build
        }
    }

    public var context: HADeployContext
    public var plan: DeployPlan
    public var settings: Settings
    public var reporter: any DeployReporter

    public init(context: HADeployContext, plan: DeployPlan, settings: Settings, reporter: any DeployReporter)
    {
        self.context = context
        self.plan = plan
        self.settings = settings
        self.reporter = reporter
    }

    var stateDirectory: URL { context.url(for: plan.stateDirectory) }

    public func run() async throws -> DeployReport {
        // Given artifacts are installed from private copies made and hashed now (ArtifactSource).
        var copyFolder: URL?
        if case .files = plan.artifacts {
            copyFolder = try ArtifactStaging.makeRunFolder(
                under: stateDirectory.appendingPathComponent("artifacts"), runID: "given-\(plan.deployID)",
                in: context.fileSystem)
        }
        defer { if let copyFolder { try? context.fileSystem.removeItem(at: copyFolder) } }
        let (inspected, checked) = try await prepareArtifacts(copyFolder: copyFolder)
        // Installs over SSH take a bundle: each .ipa is unpacked once, now, and removed at the end.
        let staging = try ArtifactStaging.prepare(
            inspected,
            needingBundles: Set(
                plan.devices.filter { $0.availability == .available && Backends.takesBundle($0) }.map(
                    \.flavour)),
            under: stateDirectory.appendingPathComponent("artifacts"), runID: plan.deployID,
            in: context.fileSystem)
        defer { staging.remove() }
        let artifacts = staging.artifacts
        // Every route's devices run here: each usbmuxd route of the run is muxed into this process's.
        let reporter = self.reporter
        let routes = await RunRoutes.open(
            plan.devices, login: plan.usbHostLogin, environment: settings.environment,
            stateDirectory: stateDirectory, fileSystem: context.fileSystem
        ) { reporter.handle(.message($0)) }
        do {
            let report = try await execute(artifacts: artifacts, routes: routes, preflightDone: checked)
            await routes.close()
            return report
        } catch {
            await routes.close()
            throw error
        }
    }

    /// The artifact for each flavour, as the plan says: given (checked against the plan's hash),
    /// generated for virtual twins, or built (after the checks that would stop the deploy anyway, so a
    /// wrong token costs no build). Also says whether the Home Assistant preflight already ran.
    func prepareArtifacts(copyFolder: URL?) async throws -> (
        artifacts: [String: Artifact], preflightDone: Bool
    ) {
        let host = HostPlatform.current
        guard case .build = plan.artifacts else {
            let artifacts = try plan.artifacts.artifacts(
                for: plan, host: host, copyingInto: copyFolder, now: context.clock.now(),
                in: context.fileSystem)
            if case .demo = plan.artifacts {
                reporter.handle(.message("using generated demo app bundles (virtual devices only)"))
            }
            return (artifacts, false)
        }
        guard let build = settings.build else { throw PlanBuildsHere() }
        // A build takes minutes: what would stop the deploy anyway is found first.
        var preflightDone = false
        if plan.verify, let verifier = try makeVerifier() {
            reporter.handle(.message("preflight: checking Home Assistant at \(plan.server) before building…"))
            do {
                for note in try await verifier.preflight(dashboards: plan.preflight) {
                    reporter.handle(.message("preflight: \(note)"))
                }
            } catch {
                await verifier.close()
                throw error
            }
            await verifier.close()
            preflightDone = true
        }
        let reporter = self.reporter
        let built = try await build(plan) { reporter.handle(.message($0)) }
        return (built, preflightDone)
    }

    func makeVerifier() throws -> HomeAssistantVerifier? {
        guard let server = plan.server.value, let reference = plan.accessToken else { return nil }
        guard let token = reference.resolve(settings.environment) else {
            throw UnresolvedSecret(reference: reference)
        }
        return try HomeAssistantVerifier(
            server: server, token: token, caFile: plan.caFile, clock: context.clock)
    }

    func execute(artifacts: [String: Artifact], routes: RunRoutes, preflightDone: Bool) async throws
        -> DeployReport
    {
        let drivers = DriverRegistry(
            host: HostPlatform.current, environment: settings.environment, runner: context.runner,
            fileSystem: context.fileSystem, clock: context.clock, workingDirectory: context.currentDirectory)
        // Preflight once per run, before any device is touched.
        var verifier: HomeAssistantVerifier?
        if plan.verify {
            if let candidate = try makeVerifier() {
                // Checked before the build already: again on this verifier (which dashboards its
                // devices cannot use), said once.
                if !preflightDone {
                    reporter.handle(.message("preflight: checking Home Assistant at \(plan.server)…"))
                }
                let notes = try await candidate.preflight(dashboards: plan.preflight)
                for note in notes where !preflightDone {
                    reporter.handle(.message("preflight: \(note)"))
                }
                verifier = candidate
            }
        }
        var environment = DeployEnvironment(
            driver: { device in
                if let failure = routes.failure(for: device) { throw failure }
                return try drivers.driver(for: device)
            }, verifier: verifier,
            verificationSkippedReason: plan.verificationSkipped
                ?? "verification skipped: HA_SERVER and HA_TOKEN are not both set",
            artifacts: artifacts, reporter: reporter, reportDirectory: settings.reportDirectory,
            lockDirectory: Self.lockDirectory(context),
            jobs: settings.jobs, failFast: settings.failFast, fileSystem: context.fileSystem,
            clock: context.clock, secrets: settings.environment)
        environment.screenshotReview = settings.screenshotReview
        environment.waitUnlock = settings.waitUnlock
        let crashes = CrashFolders(
            root: stateDirectory.appendingPathComponent("crashes"), fileSystem: context.fileSystem)
        if settings.reportDirectory == nil {
            environment.crashDirectory = try crashes.prepare(runID: plan.deployID)
        }
        var screenshots: URL?
        if settings.reportDirectory == nil && settings.keepScreenshots {
            let folder = stateDirectory.appendingPathComponent(
                "screenshots-\(PathNames.component(plan.deployID))")
            try context.fileSystem.createPrivateDirectory(at: folder)
            screenshots = folder
            environment.screenshotDirectory = folder
        }
        defer { if let screenshots { try? context.fileSystem.removeItem(at: screenshots) } }
        var report = await DeployExecutor(plan: plan, environment: environment).run()
        if settings.reportDirectory == nil { crashes.tidy(runID: plan.deployID) }
        await verifier?.close()
        do {
            try settings.deployRecords?.record(
                report, plan: plan, artifacts: artifacts,
                reportDirectory: settings.reportDirectory ?? screenshots)
        } catch {
            reporter.handle(
                .message(
                    "warning: could not remember the deployed bundle ids for rollback: \(SystemErrorText.message(error))"
                ))
        }
        if screenshots != nil {
            // Kept with the records only: the folder is gone after this run.
            for index in report.results.indices { report.results[index].screenshot = nil }
        }
        return report
    }

    /// Per user, not per checkout: two runs from different directories still see each other's locks.
    /// Never a shared temporary folder: `/tmp/hadeploy/locks` made by one user locked every other user
    /// out (and was theirs to prepare); without XDG_CACHE_HOME or HOME, the account's home folder.
    public static func lockDirectory(_ context: HADeployContext) -> URL {
        let environment = context.environment
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? environment["HOME"].flatMap {
                $0.isEmpty ? nil : URL(fileURLWithPath: $0).appendingPathComponent(".cache")
            }
            ?? context.fileSystem.homeDirectory.appendingPathComponent(".cache")
        return base.appendingPathComponent("hadeploy/locks")
    }
}

/// A plan that builds, run where nothing can build it (`deploy --plan` without its checkout): builds
/// need the checkout the plan was made in.
public struct PlanBuildsHere: Error, CustomStringConvertible, ExitStatusProviding {
    public var description: String {
        "this plan builds the app, and this run has no checkout to build from: run it in the checkout it "
            + "was planned from, or plan with --no-build and --artifact PATH or --artifacts DIR"
    }
    public var exitStatus: ExitStatus { .usage }
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
public enum USBHostTunnel {
    public static func open(
        _ remote: String, udids: [String], login: HostLogin?, environment: [String: String],
        fileSystem: any FileSystem
    ) async throws -> UsbmuxForwarder {
        let authentication: SSHAuthentication
        switch login?.login {
        case .key(let path)?: authentication = .privateKey(path: path, passphrase: nil)
        case .password(let reference)?:
            guard let password = reference.resolve(environment) else {
                throw UnresolvedSecret(reference: reference)
            }
            authentication = .password(password)
        case .agent?, nil:
            authentication = SSHLogin.authentication(
                keyVariable: "USB_HOST_SSH_KEY", variables: environment, fileSystem: fileSystem)
        }
        let config = try SSHConnectionConfig.parse(
            url: remote, authentication: authentication,
            knownHostsPath: login?.knownHosts ?? SSHLogin.knownHostsPath(environment), fileSystem: fileSystem,
            name: remote)
        let path = URLComponents(string: remote)?.path ?? ""
        return try await UsbmuxForwarder.start(
            ssh: config, remoteSocket: path.isEmpty || path == "/" ? "/var/run/usbmuxd" : path,
            allowedUDIDs: udids)
    }
}
