import ArgumentParser
import DeployModel
import Foundation
import HADeployCore
import HADeployKit

struct VerifyCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check Home Assistant before a deploy: server, token, version, dashboard, entities.",
        discussion: """
            Runs automatically before every deploy that verifies (skip with --no-verify).
            Examples:
              hadeploy verify                     the default dashboard (or HA_DASHBOARD)
              hadeploy verify --dashboard wall-kitchen
              hadeploy verify --server https://ha.example.com/ha/ --json
            Exit 0 when the deploy could go ahead (missing entities are warnings),
            1 otherwise.
            """)

    @OptionGroup var project: ProjectOptions

    @Option(name: .long, help: ArgumentHelp("Check this dashboard (its url_path).", valueName: "name"))
    var dashboard: String?

    @Flag(name: .customLong("default"), help: "Check the default dashboard.")
    var defaultDashboard = false

    @Option(name: .long, help: ArgumentHelp("Home Assistant URL (default: HA_SERVER).", valueName: "url"))
    var server: String?

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        if dashboard != nil && defaultDashboard {
            throw ValidationError("--dashboard and --default conflict: choose one dashboard")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let choice: DashboardChoice =
            dashboard.map { .named($0) } ?? (defaultDashboard ? .appDefault : .unspecified)
        let check = HomeAssistantCheck(variables: try workspace.loadVariables().values, clock: context.clock)
        let report = try await check.run(server: server, dashboard: choice)
        context.print(json ? try PlanPrinter.json(report) : HomeAssistantCheck.text(report))
        if !report.passed { throw ExitCode(ExitStatus.failure.rawValue) }
    }
}
