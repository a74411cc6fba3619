import ArgumentParser
import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployReporting
import HADeployStatus

struct DeployCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "deploy",
        abstract: "Build, install, launch and verify on the given devices (the default command).",
        discussion: """
            Examples:
              hadeploy all --kiosk
              hadeploy ipad2 --no-build
              hadeploy sim iphone
              hadeploy mini4 --dashboard wall-kitchen
              hadeploy all --dry-run                  print the plan, touch nothing
              hadeploy all --kiosk --virtual --report out/     (virtual devices)
              hadeploy all --no-build --artifacts dist/ --report out/ --json
              hadeploy plan all --no-build --artifacts dist/ --json > plan.json
              hadeploy deploy --plan plan.json        run exactly that plan
            --plan FILE runs a plan file as it is: the devices are the file's, not
            devices.yaml's (a checkout here must be the one the plan was made for);
            the secrets it names (env:HA_TOKEN, env:*_SSH_PASS(WORD) only) come from
            the environment (a plan that builds also reads .env, for its builds).
            A plan file names tools by name only (pymobiledevice3, rosettasim-ctl,
            resolved here), keeps its files under this run's --state, and is held to
            devices.yaml's limits. Only a signed plan runs: HADEPLOY_PLAN_KEY set where
            it is made (plan --json) and where it runs; --unsigned runs one without a
            signature (only a plan you wrote yourself: it decides where the token goes).
            A plan that builds runs only in the checkout it was planned from.
            With --report, each screenshot is compared with the device's last verified one
            (.hadeploy/baselines): same (99 %+), changed a little (90 %+) or different.
            --publish [URL] sends the devices to Home Assistant once the deploy is done,
            as `status --publish` does (the broker from URL or MQTT_URL): each device's
            status now, this deploy's outcome as its "Last deploy", and the screenshot
            of a verified deploy as its Screenshot image (taken even without --report).
            Exit codes: 0 every device succeeded, 1 some device failed (or the report
            could not be written), 2 build failed, 4 deployed but not published (the
            broker could not be used; a failed device's 1 comes first), 64 usage,
            78 config, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
            """)

    @OptionGroup var project: ProjectOptions
    @OptionGroup var arguments: DeployArguments

    @Flag(name: .customLong("dry-run"), help: "Print the plan and touch nothing.")
    var dryRun = false

    @Flag(name: .long, help: "JSON Lines events on stdout (human lines on stderr).")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write summary.json, junit.xml, screenshots and index.html here.", valueName: "dir"))
    var report: String?

    @Flag(
        name: .customLong("fail-on-visual-change"),
        help: "Fail a device whose screenshot changed against its last verified one (with --report).")
    var failOnVisualChange = false

    @Flag(
        name: .customLong("accept-screenshots"),
        help: "Keep this deploy's screenshots as the devices' new baselines, changed or not (with --report).")
    var acceptScreenshots = false

    @OptionGroup var publishing: PublishOptions

    @Option(
        name: .long, help: ArgumentHelp("Deploy to at most N devices at once (default: all).", valueName: "n")
    )
    var jobs: Int?

    /// More devices at once than any matrix has (each device is a task, a connection and a lock).
    static let maxJobs = 256

    @Flag(name: .customLong("fail-fast"), help: "Stop the remaining devices after the first failure.")
    var failFast = false

    @Option(
        name: .customLong("wait-unlock"),
        help: ArgumentHelp(
            "Wait up to DURATION (30s, 10m, 1h) for a device behind its passcode — locked, or not unlocked "
                + "since it restarted — asking it every 2 s, and go on once it is unlocked.",
            valueName: "duration"))
    var waitUnlock: String?

    @Option(
        name: .customLong("plan"),
        help: ArgumentHelp(
            "Run this plan file (hadeploy plan … --json > FILE) exactly; no targets or plan options.",
            valueName: "file"))
    var planFile: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Run a --plan file that is not signed (HADEPLOY_PLAN_KEY unset): only a plan you wrote yourself.")
    )
    var unsigned = false

    func validate() throws {
        if let waitUnlock, StatusCommand.seconds(waitUnlock) == nil {
            throw ValidationError("--wait-unlock \(waitUnlock) is not a duration: write 30s, 10m or 1h")
        }
        if planFile != nil {
            let changesThePlan =
                !arguments.targets.isEmpty || arguments.noBuild || arguments.dashboard != nil
                || arguments.defaultDashboard || arguments.server != nil || arguments.kiosk != nil
                || arguments.noVerify || arguments.force || arguments.reset || arguments.demo
                || arguments.virtual
                || arguments.artifact != nil || arguments.artifacts != nil || dryRun
            if changesThePlan {
                throw ValidationError(
                    "--plan runs the plan file as it is: give targets and plan options to `hadeploy plan`")
            }
        } else if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy all` or `hadeploy mini4`")
        }
        if unsigned && planFile == nil { throw ValidationError("--unsigned goes with --plan FILE") }
        if let jobs, !(1...DeployCommand.maxJobs).contains(jobs) {
            throw ValidationError(
                "--jobs \(jobs) is out of range: give how many devices may deploy at once, from 1 to "
                    + "\(DeployCommand.maxJobs) (leave it out for every device at once)")
        }
        if report == nil,
            let flag = failOnVisualChange
                ? "--fail-on-visual-change" : acceptScreenshots ? "--accept-screenshots" : nil
        {
            throw ValidationError(
                "\(flag) needs --report DIR: screenshots are taken, and compared with the last ones, for the report"
            )
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        // Before any device (or twin) is touched: a report that cannot be written is found now.
        if let report, !dryRun {
            try ReportWriter.checkWritable(
                context.url(for: report), displayName: report, fileSystem: context.fileSystem)
        }
        let inputs: PlanInputs?
        let plan: DeployPlan
        // The environment the plan's secrets are read from: `.env` and the environment for a plan
        // made here, the environment alone for a plan file.
        var secrets: [String: String]
        var planFileBuild: DeploySession.Builder?
        if let planFile {
            inputs = nil
            let loaded = try await loadPlan(planFile, context: context)
            plan = loaded.plan
            planFileBuild = loaded.build
            secrets = context.environment
        } else {
            let made = try await PlanInputs.make(
                workspace: workspace, arguments: arguments,
                screenshots: report != nil || publishing.publish != nil)
            inputs = made
            plan = made.plan
            secrets = made.variables
        }
        if let token = try arguments.fileToken(context) { secrets["HA_TOKEN"] = token.reveal() }
        // `--publish`: a broker URL or topic prefix that cannot work stops the run before any device.
        let virtual = inputs.map { $0.twins != nil } ?? plan.devices.contains { $0.backend.isVirtualTwin }
        var publisher: StatusPublishing?
        if !dryRun,
            let made = publishing.publishing(
                variables: inputs?.variables ?? context.environment, context: context,
                recordDirectory: PublishOptions.recordDirectory(
                    context: context, virtual: virtual, stateDirectory: context.url(for: plan.stateDirectory)),
                deadlineSeconds: Self.publishSeconds)
        {
            switch made {
            case .success(let value): publisher = value
            case .failure(let problem):
                await inputs?.twins?.stop()
                throw problem
            }
        }
        if dryRun {
            await inputs?.twins?.stop()
            context.print(json ? try PlanPrinter.json(plan) : PlanPrinter.text(plan))
            return
        }
        let reporter: any DeployReporter
        if json {
            reporter = FanOutReporter([
                JSONLinesReporter(output: context.output, clock: context.clock),
                PlainReporter(output: context.output, stream: .standardError, clock: context.clock),
            ])
        } else if isatty(STDERR_FILENO) == 1 && context.environment["TERM"] != "dumb" {
            reporter = TerminalReporter(output: context.output, clock: context.clock)
        } else {
            reporter = PlainReporter(output: context.output, stream: .standardError, clock: context.clock)
        }
        if let twins = inputs?.twins {
            reporter.handle(.message("virtual devices up: USBMUXD_SOCKET_ADDRESS=\(twins.twins.address)"))
        }
        var settings = DeploySession.Settings(
            environment: secrets, reportDirectory: report.map { context.url(for: $0) },
            jobs: jobs, failFast: failFast,
            build: inputs.map { $0.workspace.builder(matrix: $0.matrix, variables: $0.variables) }
                ?? planFileBuild)
        settings.waitUnlock = try waitUnlock.map { text in
            guard let seconds = StatusCommand.seconds(text) else {
                throw ValidationError("--wait-unlock \(text) is not a duration: write 30s, 10m or 1h")
            }
            return .seconds(seconds)
        }
        // `rollback DEVICE` later needs to know which app a deploy installed; twins keep their own
        // records (for `status --virtual`), apart from the real devices'.
        settings.deployRecords =
            virtual
            ? .twins(context, stateDirectory: context.url(for: plan.stateDirectory)) : .project(context)
        if report != nil {
            settings.screenshotReview = ScreenshotReview(
                baselines: .project(context, virtual: virtual), acceptNew: acceptScreenshots,
                failOnChange: failOnVisualChange)
        }
        settings.keepScreenshots = publisher != nil
        let session = DeploySession(context: context, plan: plan, settings: settings, reporter: reporter)
        let started = context.clock.now()
        let task = Task { try await session.run() }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.cancel() }
        let result: DeployReport
        do {
            result = try await task.value
        } catch {
            // Stopped before any device was touched (a refused token, a failed build): CI still
            // gets a report saying so for every device, and Home Assistant the same outcome.
            let stopped = DeployReport.notStarted(
                plan, reason: SystemErrorText.message(error), startedAt: started,
                finishedAt: context.clock.now())
            if signals.received == nil,
                let problem = await publish(
                    stopped, with: publisher, plan: plan, inputs: inputs, settings: settings,
                    secrets: secrets, virtual: virtual, context: context, reporter: reporter)
            {
                context.message("error: \(problem.message)")
            }
            await inputs?.twins?.stop()
            if let directory = report {
                do {
                    try ReportWriter(directory: context.url(for: directory), fileSystem: context.fileSystem)
                        .write(stopped)
                    context.message(
                        "report: \((directory as NSString).appendingPathComponent("index.html"))")
                } catch {
                    context.message(
                        "error: could not write the report to \(directory): \(SystemErrorText.describe(error))"
                    )
                }
            }
            // Ctrl-C or SIGTERM: 130 or 143, not the failure a device's fault gives.
            if let signal = signals.received {
                throw Interrupted(signal: signal, cause: error)
            }
            throw error
        }
        // Published while the twins still run: each device's status now, with this deploy's outcome.
        let notPublished =
            signals.received == nil
            ? await publish(
                result, with: publisher, plan: plan, inputs: inputs, settings: settings, secrets: secrets,
                virtual: virtual, context: context, reporter: reporter) : nil
        await inputs?.twins?.stop()
        if let directory = report {
            // Named only when it exists: the executor said why it does not.
            if result.reportProblem == nil {
                context.message("report: \((directory as NSString).appendingPathComponent("index.html"))")
            }
        }
        if let signal = signals.received { throw ExitCode(ExitStatus.stopped(by: signal).rawValue) }
        if let notPublished { context.message("error: \(notPublished.message)") }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
        if let notPublished { throw ExitCode(notPublished.exitCode) }
    }

    /// How long each device's status (for --publish) and each MQTT step may take.
    static let publishSeconds: Double = 15

    /// `--publish`: each device of `report` as `status` reads it now, with the deploy's outcome, to
    /// Home Assistant (before the twins stop). What went wrong, or nil.
    func publish(
        _ report: DeployReport, with publisher: StatusPublishing?, plan: DeployPlan, inputs: PlanInputs?,
        settings: DeploySession.Settings, secrets: [String: String], virtual: Bool, context: HADeployContext,
        reporter: any DeployReporter
    ) async -> StatusPublishing.Problem? {
        guard let publisher, let records = settings.deployRecords else { return nil }
        reporter.handle(.message("publishing to Home Assistant through \(publisher.broker)…"))
        let status = StatusSession(
            context: context, variables: secrets, deployPlan: plan, virtual: virtual, records: records,
            deadlineSeconds: Self.publishSeconds)
        do throws(StatusPublishing.Problem) {
            let summary = try await publisher.publish(
                deploy: report, session: status, configured: inputs.map { Set($0.matrix.devices.map(\.id)) })
            reporter.handle(.message(publisher.line(summary)))
            return nil
        } catch {
            return error
        }
    }

    /// Reads a plan file and holds it to what a plan file may do (`PlanFileLoader`: tools by name,
    /// allowed secrets, devices.yaml's bounds, the run's own state folder, the signature when
    /// HADEPLOY_PLAN_KEY is set); a checkout here (devices.yaml at --config) must be the one the plan was
    /// made for.
    ///
    /// A plan that builds runs in the checkout it was planned from: its build commands must be the
    /// ones this checkout plans, and the returned builder runs them (nil without a checkout here).
    func loadPlan(_ path: String, context: HADeployContext) async throws -> (
        plan: DeployPlan, build: DeploySession.Builder?
    ) {
        let url = context.url(for: path)
        let data: Data
        do {
            guard let contents = context.fileSystem.contents(atPath: url.path) else {
                throw CocoaError(.fileReadNoSuchFile)
            }
            data = contents
        } catch {
            throw PlanFileError(path: path, problem: "cannot read it: \(SystemErrorText.message(error))")
        }
        var project: String?
        var buildCommands: [String: [ProcessCommand]]?
        var build: DeploySession.Builder?
        if context.fileSystem.fileExists(atPath: context.url(for: self.project.config).path) {
            let workspace = self.project.workspace(context)
            let (variables, dotEnv) = try workspace.loadVariables()
            let version = try await workspace.loadVersion(allowShallow: true)
            project = try workspace.fingerprint(dotEnv: dotEnv, version: version)
            let matrix = try workspace.loadMatrix()
            buildCommands = workspace.plannedBuildCommands(
                matrix: matrix, variables: variables, version: version)
            build = workspace.builder(matrix: matrix, variables: variables)
        }
        let home = context.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        var loader = PlanFileLoader(
            environment: context.environment, workingDirectory: context.currentDirectory,
            stateDirectory: context.url(for: arguments.state), home: home, fileSystem: context.fileSystem)
        loader.requireSignature = !unsigned
        let loaded = try loader.load(data, path: path, project: project, buildCommands: buildCommands)
        for note in loaded.notes { context.message("note: \(note)") }
        return (loaded.plan, build)
    }
}

/// A deploy stopped by SIGINT or SIGTERM while it was starting (before the devices): the reason it
/// gave, and the exit status of the signal (130, 143).
struct Interrupted: Error, CustomStringConvertible, ExitStatusProviding {
    var signal: Int32
    var cause: any Error

    var description: String {
        let name = signal == SIGTERM ? "terminated (SIGTERM)" : "interrupted (Ctrl-C)"
        return "\(name) before any device was deployed: \(cause)"
    }

    var exitStatus: ExitStatus { .stopped(by: signal) }
}
