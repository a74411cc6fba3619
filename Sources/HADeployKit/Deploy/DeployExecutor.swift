import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import HADeployReporting

/// Everything the executor needs besides the plan: how to reach devices, what to install, where to
/// report. Injected, so the pipeline is tested with real virtual devices or, for pure logic, fakes.
public struct DeployEnvironment: Sendable {
    public var driver: @Sendable (DevicePlan) throws -> any DeviceDriver
    public var verifier: (any DashboardVerifier)?
    /// Why there is no verifier (no HA_SERVER/HA_TOKEN, --no-verify), for the results.
    public var verificationSkippedReason: String
    /// The artifact for each flavour.
    public var artifacts: [String: Artifact]
    public var reporter: any DeployReporter
    public var reportDirectory: URL?
    /// Where crash reports go when there is no report directory: a folder of this user's (the
    /// project's state folder), never a shared, guessable path such as `/tmp/hadeploy-<id>`. nil (a
    /// library caller that names none): a new folder of an unguessable name in the temporary folder.
    public var crashDirectory: URL?
    /// Where screenshots go when there is no report directory (`deploy --publish`): a private folder
    /// of this run's, read when the deploy is recorded. nil with no report: no screenshot is kept.
    public var screenshotDirectory: URL?
    public var lockDirectory: URL
    /// Compares the screenshots with the devices' baselines once every device is done (nil: not).
    public var screenshotReview: ScreenshotReview?
    public var jobs: Int?
    public var failFast: Bool
    /// `--wait-unlock`: how long a device behind its passcode (locked, or not unlocked since it
    /// restarted) is waited for, polled every few seconds, before it ends with its reason. nil: not.
    public var waitUnlock: Duration?
    /// The run's times, every step's deadline and every retry's wait.
    public var clock: any WallClock
    /// The clock's time of day.
    public var now: @Sendable () -> Date {
        let clock = self.clock
        return { clock.now() }
    }
    /// Where reports, crash reports and screenshots are written.
    public var fileSystem: any FileSystem
    /// The environment the plan's secrets are read from at the last moment (`env:HA_TOKEN`).
    public var secrets: [String: String]

    public init(
        driver: @escaping @Sendable (DevicePlan) throws -> any DeviceDriver,
        verifier: (any DashboardVerifier)?,
        verificationSkippedReason: String, artifacts: [String: Artifact], reporter: any DeployReporter,
        reportDirectory: URL?, lockDirectory: URL, jobs: Int? = nil, failFast: Bool = false,
        fileSystem: any FileSystem, clock: any WallClock, secrets: [String: String] = [:]
    ) {
        self.secrets = secrets
        self.driver = driver
        self.verifier = verifier
        self.verificationSkippedReason = verificationSkippedReason
        self.artifacts = artifacts
        self.reporter = reporter
        self.reportDirectory = reportDirectory
        self.lockDirectory = lockDirectory
        self.jobs = jobs
        self.failFast = failFast
        self.clock = clock
        self.fileSystem = fileSystem
    }
}

/// A device failed in a step; carries what the report needs.
struct StepFailure: Error {
    var step: String
    var reason: String
    var hostLimited = false
    /// The device refused because it is locked (`DeviceLockClassifying`).
    var locked = false
}

/// Runs a `DeployPlan`: devices in parallel (capped by --jobs), each step under a deadline, transient
/// faults retried after re-probing, one result per device whatever happens.
public struct DeployExecutor: Sendable {
    public var plan: DeployPlan
    public var environment: DeployEnvironment

    public init(plan: DeployPlan, environment: DeployEnvironment) {
        self.plan = plan
        self.environment = environment
    }

    public func run() async -> DeployReport {
        let started = environment.now()
        let env = environment
        env.reporter.handle(
            .runStarted(
                deployID: plan.deployID, version: plan.version.description, devices: plan.devices.map(\.id)))

        let collector = ResultCollector(order: plan.devices.map(\.id))
        let devices = plan.devices
        // Never more slots than devices: a huge --jobs must not mean a huge loop.
        let limit = max(1, min(environment.jobs ?? devices.count, devices.count))
        await withTaskGroup(of: Void.self) { group in
            var pending = devices[...]
            var running = 0
            func startNext() {
                guard let device = pending.popFirst() else { return }
                running += 1
                group.addTask {
                    let result = await DevicePipeline(plan: self.plan, device: device, environment: env).run()
                    await collector.add(result)
                    env.reporter.handle(.deviceFinished(result))
                }
            }
            for _ in 0..<limit { startNext() }
            while running > 0 {
                await group.next()
                running -= 1
                if env.failFast, await collector.anyFailed {
                    group.cancelAll()
                    pending = []
                }
                if !Task.isCancelled { startNext() }
            }
        }

        let interrupted = Task.isCancelled
        var results = await collector.ordered
        // Devices that never ran (Ctrl-C, --fail-fast) still get a line in the report.
        for device in plan.devices where !results.contains(where: { $0.id == device.id }) {
            results.append(
                DeviceResult(
                    id: device.id, name: device.name, ios: device.ios, transport: device.backend.label,
                    version: plan.version.description, outcome: .cancelled,
                    reason: interrupted ? "interrupted before it started" : "not started (--fail-fast)",
                    failedStep: nil, install: nil, verification: .notRun, steps: [], screenshot: nil,
                    crashReports: [], seconds: 0))
        }
        results.sort { a, b in
            (plan.devices.firstIndex { $0.id == a.id } ?? 0)
                < (plan.devices.firstIndex { $0.id == b.id } ?? 0)
        }
        var parity: [ParityCheck]?
        if let review = environment.screenshotReview, let directory = environment.reportDirectory {
            let reviewed = review.review(results, plan: plan, reportDirectory: directory)
            results = reviewed.results
            parity = reviewed.parity.isEmpty ? nil : reviewed.parity
            for warning in reviewed.warnings { env.reporter.handle(.message("warning: \(warning)")) }
        }
        let failed = results.contains { !$0.succeeded }
        var report = DeployReport(
            deployID: plan.deployID, version: plan.version.description, startedAt: started,
            finishedAt: environment.now(), verify: plan.verify, interrupted: interrupted, results: results,
            exitCode: failed || interrupted ? ExitStatus.failure.rawValue : ExitStatus.success.rawValue)
        report.parity = parity
        if let directory = environment.reportDirectory {
            do {
                try ReportWriter(directory: directory, fileSystem: environment.fileSystem).write(report)
            } catch {
                // The folder was checked before the first device; it can still fill up or go away.
                // A report CI will not find is a failed run, whatever the devices did.
                let problem =
                    "could not write the report to \(directory.path): \(SystemErrorText.describe(error))"
                report.reportProblem = problem
                report.exitCode = ExitStatus.failure.rawValue
                env.reporter.handle(
                    .message(
                        "error: \(problem) (the results are in the table below; free space or choose "
                            + "another --report folder)"))
            }
        }
        env.reporter.handle(.runFinished(report))
        return report
    }
}

actor ResultCollector {
    private let order: [String]
    private var results: [DeviceResult] = []

    init(order: [String]) { self.order = order }

    func add(_ result: DeviceResult) { results.append(result) }

    var anyFailed: Bool { results.contains { $0.outcome == .failed } }

    var ordered: [DeviceResult] {
        results.sorted { (order.firstIndex(of: $0.id) ?? 0) < (order.firstIndex(of: $1.id) ?? 0) }
    }
}
