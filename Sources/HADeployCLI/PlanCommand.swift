import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show the per-device plan: flavour, transport, version and exact launch arguments.",
        discussion: """
            Secrets are shown as ***. Values missing from .env appear as <unset: KEY>.
            Examples:
              hadeploy plan all
              hadeploy plan mini4 ipad2 --dashboard wall-kitchen --json
              hadeploy plan sim iphone --no-kiosk
              hadeploy plan all --as-host macos     as on a Mac (simulator builds too)
            """)

    @OptionGroup var project: ProjectOptions
    @OptionGroup var arguments: DeployArguments

    @Flag(name: .long, help: "Print the plan as JSON.")
    var json = false

    @Option(
        name: .customLong("as-host"),
        help: ArgumentHelp("Plan as on a macos or linux host (default: this one).", valueName: "os"))
    var asHost: String?

    var host: HostPlatform {
        get throws {
            switch asHost?.lowercased() {
            case nil: return .current
            case "macos", "mac", "darwin": return .macOS
            case "linux": return .linux
            case let other?: throw ValidationError("--as-host takes macos or linux, not '\(other)'")
            }
        }
    }

    func validate() throws {
        if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy plan all`")
        }
    }

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let plan = try await Self.makePlan(workspace: workspace, arguments: arguments, host: try host)
            context.print(json ? try PlanPrinter.json(plan) : PlanPrinter.text(plan))
        }
    }

    static func makePlan(workspace: Workspace, arguments: DeployArguments, host: HostPlatform = .current)
        async throws -> DeployPlan
    {
        let matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        let version = try await workspace.loadVersion(allowShallow: arguments.allowShallow)
        let planner = DeployPlanner(matrix: matrix, variables: variables, host: host)
        return try planner.plan(
            options: arguments.options, version: version, deployID: UUID().uuidString.lowercased())
    }
}
