import ArgumentParser
import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployReporting

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
            With --report, each screenshot is compared with the device's last verified one
            (.hadeploy/baselines): same (99 %+), changed a little (90 %+) or different.
            Exit codes: 0 every device succeeded, 1 some device failed (or the report
            could not be written), 2 build failed, 64 usage, 78 config, 130 interrupted
            (Ctrl-C), 143 terminated (SIGTERM).
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

    @Option(
        name: .long, help: ArgumentHelp("Deploy to at most N devices at once (default: all).", valueName: "n")
    )
    var jobs: Int?

    /// More devices at once than any matrix has (each device is a task, a connection and a lock).
    static let maxJobs = 256

    @Flag(name: .customLong("fail-fast"), help: "Stop the remaining devices after the first failure.")
    var failFast = false

    @Option(name: .long, help: ArgumentHelp("Install this .ipa/.app (with --no-build).", valueName: "path"))
    var artifact: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Install DIR/<flavour>/*.ipa|.app (with --no-build).", valueName: "dir"))
    var artifacts: String?

    /// A worker for one USB route, started by another hadeploy (libusbmuxd takes one address per
    /// process): JSON events on stdout, no report files of its own.
    @Flag(name: .customLong("worker"), help: .hidden)
    var worker = false

    @Option(name: .customLong("deploy-id"), help: .hidden)
    var deployID: String?

    @Option(name: .customLong("artifact-manifest"), help: .hidden)
    var artifactManifest: String?

    func validate() throws {
        if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy all` or `hadeploy mini4`")
        }
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
        if artifact != nil && artifacts != nil {
            throw ValidationError("--artifact and --artifacts conflict")
        }
        if (artifact != nil || artifacts != nil) && !arguments.noBuild {
            throw ValidationError("--artifact/--artifacts install an existing build: add --no-build")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = Workspace(
            context: context, configPath: project.config, envFilePath: project.envFile)
        // Before any device (or twin) is touched: a report that cannot be written is found now.
        if let report, !dryRun, !worker {
            try ReportWriter.checkWritable(
                context.url(for: report), displayName: report, fileSystem: context.fileSystem)
        }
        let inputs = try await PlanInputs.make(
            workspace: workspace, arguments: arguments, screenshots: report != nil, deployID: deployID)
        let plan = inputs.plan
        if dryRun {
            await inputs.twins?.stop()
            context.print(json ? try PlanPrinter.json(plan) : PlanPrinter.text(plan))
            return
        }
        let reporter: any DeployReporter
        if json || worker {
            reporter =
                worker
                ? JSONLinesReporter(output: context.output, clock: context.clock)
                : FanOutReporter([
                    JSONLinesReporter(output: context.output, clock: context.clock),
                    PlainReporter(output: context.output, stream: .standardError, clock: context.clock),
                ])
        } else if isatty(STDERR_FILENO) == 1 && context.environment["TERM"] != "dumb" {
            reporter = TerminalReporter(output: context.output, clock: context.clock)
        } else {
            reporter = PlainReporter(output: context.output, stream: .standardError, clock: context.clock)
        }
        if let twins = inputs.twins {
            reporter.handle(.message("virtual devices up: USBMUXD_SOCKET_ADDRESS=\(twins.twins.address)"))
        }
        var settings = DeploySession.Settings(
            artifact: artifact.map { context.url(for: $0) },
            artifacts: artifacts.map { context.url(for: $0) },
            artifactManifest: artifactManifest.map { context.url(for: $0) },
            virtual: arguments.virtual, developerImages: inputs.twins?.developerImages,
            stateDirectory: context.url(for: arguments.state),
            reportDirectory: report.map { context.url(for: $0) }, writeReport: !worker, jobs: jobs,
            failFast: failFast, force: arguments.force,
            worker: worker ? nil : workerLauncher(context: context, deployID: plan.deployID))
        settings.jailbrokenTwins = inputs.twins?.twins.jailbroken ?? [:]
        // `rollback DEVICE` later needs to know which app a deploy installed; twins keep their own
        // records (for `status --virtual`), apart from the real devices'.
        settings.deployRecords =
            arguments.virtual
            ? .twins(context, stateDirectory: context.url(for: arguments.state)) : .project(context)
        if report != nil, !worker {
            settings.screenshotReview = ScreenshotReview(
                baselines: .project(context, virtual: arguments.virtual), acceptNew: acceptScreenshots,
                failOnChange: failOnVisualChange)
        }
        let session = DeploySession(
            context: context, matrix: inputs.matrix, variables: inputs.variables, plan: plan,
            settings: settings, reporter: reporter)
        let started = context.clock.now()
        let task = Task { try await session.run() }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.cancel() }
        let result: DeployReport
        do {
            result = try await task.value
        } catch {
            await inputs.twins?.stop()
            // Stopped before any device was touched (a refused token, a failed build): CI still
            // gets a report saying so for every device.
            if let directory = report, !worker {
                let stopped = DeployReport.notStarted(
                    plan, reason: SystemErrorText.message(error), startedAt: started,
                    finishedAt: context.clock.now())
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
        await inputs.twins?.stop()
        if let directory = report, !worker {
            // Named only when it exists: the executor said why it does not.
            if result.reportProblem == nil {
                context.message("report: \((directory as NSString).appendingPathComponent("index.html"))")
            }
        }
        if let signal = signals.received { throw ExitCode(ExitStatus.stopped(by: signal).rawValue) }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }

    /// hadeploy itself, deploying one USB route's devices with this run's options and artifacts.
    /// A `--token` travels in the worker's environment, never on its command line.
    func workerLauncher(context: HADeployContext, deployID: String) -> WorkerLauncher {
        let executable = Bundle.main.executableURL?.path ?? CommandLine.arguments[0]
        let directory = context.currentDirectory.path
        let base = [
            "--config=\(context.url(for: project.config).path)",
            "--env-file=\(context.url(for: project.envFile).path)",
        ]
        // `--option=value`, and the devices after `--`: a value that starts with `-` (a dashboard
        // named `-X`) must reach the worker as the value it is, as this process read it.
        var options: [String] = []
        if let dashboard = arguments.dashboard { options.append("--dashboard=\(dashboard)") }
        if arguments.defaultDashboard { options.append("--default") }
        if let server = arguments.server { options.append("--server=\(server)") }
        if let kiosk = arguments.kiosk { options.append(kiosk ? "--kiosk" : "--no-kiosk") }
        if arguments.noVerify { options.append("--no-verify") }
        if arguments.force { options.append("--force") }
        if arguments.reset { options.append("--reset") }
        if arguments.demo { options.append("--demo") }
        if arguments.allowShallow { options.append("--allow-shallow") }
        options.append("--state=\(context.url(for: arguments.state).path)")
        if let report { options.append("--report=\(context.url(for: report).path)") }
        if let jobs { options.append("--jobs=\(jobs)") }
        var environment: [String: String] = [:]
        if let token = arguments.token { environment["HA_TOKEN"] = token }
        let secrets: Set<String> = arguments.token.map { [$0] } ?? []
        let fixedOptions = options
        let fixedEnvironment = environment
        return WorkerLauncher { _, devices, manifest in
            ProcessCommand(
                executable,
                ["deploy"] + base + fixedOptions + [
                    "--no-build", "--worker", "--artifact-manifest=\(manifest.path)",
                    "--deploy-id=\(deployID)",
                    "--",
                ] + devices,
                environment: fixedEnvironment, workingDirectory: directory, secretValues: secrets)
        }
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
