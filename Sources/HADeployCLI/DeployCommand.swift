import ArgumentParser
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit

struct DeployCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deploy",
        abstract: "Build, install, launch and verify on the given devices (the default command).",
        discussion: """
            Examples:
              hadeploy all --kiosk
              hadeploy ipad2 --no-build
              hadeploy sim iphone
              hadeploy mini4 --dashboard wall-kitchen
              hadeploy all --dry-run                          print the plan, touch nothing
              hadeploy all --kiosk --virtual --report out/    the whole pipeline on virtual devices
              hadeploy all --no-build --artifacts dist/ --report out/ --json
            Exit codes: 0 every device succeeded, 1 some device failed, 2 build failed, 64 usage, 78 config.
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

    @Option(
        name: .long, help: ArgumentHelp("Deploy to at most N devices at once (default: all).", valueName: "n")
    )
    var jobs: Int?

    @Flag(name: .customLong("fail-fast"), help: "Stop the remaining devices after the first failure.")
    var failFast = false

    @Option(name: .long, help: ArgumentHelp("Install this .ipa/.app (with --no-build).", valueName: "path"))
    var artifact: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Install DIR/<flavour>/*.ipa|.app (with --no-build).", valueName: "dir"))
    var artifacts: String?

    @Flag(name: .long, help: "Run against virtual devices standing in for the matrix (the built-in demo).")
    var virtual = false

    @Option(name: .long, help: ArgumentHelp("State directory for --virtual devices.", valueName: "dir"))
    var state: String = ".hadeploy/virtual"

    func validate() throws {
        if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy all` or `hadeploy mini4`")
        }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if artifact != nil && artifacts != nil {
            throw ValidationError("--artifact and --artifacts conflict")
        }
        if (artifact != nil || artifacts != nil) && !arguments.noBuild {
            throw ValidationError("--artifact/--artifacts install an existing build: add --no-build")
        }
    }

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let plan = try await PlanCommand.makePlan(workspace: workspace, arguments: arguments)
            if dryRun {
                context.print(json ? try PlanPrinter.json(plan) : PlanPrinter.text(plan))
                return
            }
            let matrix = try workspace.loadMatrix()
            let (variables, _) = try workspace.loadVariables()
            let reporter: any DeployReporter
            if json {
                reporter = FanOutReporter([
                    JSONLinesReporter(output: context.output),
                    PlainReporter(output: context.output, stream: .standardError),
                ])
            } else if isatty(STDERR_FILENO) == 1 && context.environment["TERM"] != "dumb" {
                reporter = TerminalReporter(output: context.output)
            } else {
                reporter = PlainReporter(output: context.output, stream: .standardError)
            }
            let session = DeploySession(
                context: context, matrix: matrix, variables: variables, plan: plan,
                settings: DeploySession.Settings(
                    artifact: artifact.map { context.url(for: $0) },
                    artifacts: artifacts.map { context.url(for: $0) },
                    virtual: virtual, stateDirectory: context.url(for: state),
                    reportDirectory: report.map { context.url(for: $0) }, jobs: jobs, failFast: failFast,
                    force: arguments.force),
                reporter: reporter)
            let started = Date()
            let task = Task { try await session.run() }
            let signals = SignalCancellation { task.cancel() }
            defer { signals.cancel() }
            let result: DeployReport
            do {
                result = try await task.value
            } catch {
                // Stopped before any device was touched (a refused token, a failed build): CI still
                // gets a report saying so for every device.
                if let directory = report {
                    let stopped = DeployReport.notStarted(
                        plan, reason: "\(error)", startedAt: started, finishedAt: Date())
                    try? ReportWriter(directory: context.url(for: directory)).write(stopped)
                    context.message("report: \((directory as NSString).appendingPathComponent("index.html"))")
                }
                throw error
            }
            if let directory = report {
                context.message("report: \((directory as NSString).appendingPathComponent("index.html"))")
            }
            if result.exitCode != 0 { throw ExitCode(result.exitCode) }
        }
    }
}
