import ArgumentParser
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
              hadeploy all --dry-run          print the plan, touch nothing
            """)

    @OptionGroup var project: ProjectOptions
    @OptionGroup var arguments: DeployArguments

    @Flag(name: .customLong("dry-run"), help: "Print the plan and touch nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Machine-readable output on stdout (human messages on stderr).")
    var json = false

    func validate() throws {
        if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy all` or `hadeploy mini4`")
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
            throw DeployNotAvailable()
        }
    }
}

/// Until the executor lands, a real deploy says plainly that it cannot run (never a silent success).
struct DeployNotAvailable: Error, CustomStringConvertible, ExitStatusProviding {
    var description: String {
        "this build of hadeploy can only plan: run with --dry-run (or `hadeploy plan`) to see what a deploy would do"
    }
    var exitStatus: ExitStatus { .failure }
}
