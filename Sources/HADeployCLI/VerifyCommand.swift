import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit
import HomeAssistant

struct VerifyCommand: AsyncParsableCommand {
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

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let (variables, _) = try workspace.loadVariables()
            guard let url = server ?? variables["HA_SERVER"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                throw ConfigurationMissing(keys: ["HA_SERVER"])
            }
            guard let token = variables["HA_TOKEN"], !token.isEmpty else {
                throw ConfigurationMissing(keys: ["HA_TOKEN"])
            }
            let selection: DashboardSelection
            if let dashboard {
                selection = .named(dashboard)
            } else if defaultDashboard {
                selection = .defaultDashboard
            } else if let fromEnv = variables["HA_DASHBOARD"], !fromEnv.isEmpty {
                selection = .named(fromEnv)
            } else {
                selection = .defaultDashboard
            }
            let address: ServerAddress
            do {
                address = try ServerAddress(url)
            } catch {
                throw ValidationError("--server: \(error)")
            }
            let options = ClientOptions(
                server: address, token: AccessToken(token),
                caFile: variables["HA_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
            let report = await Preflight(options: options).run(dashboard: selection)
            if json {
                context.print(try PlanPrinter.json(report))
            } else {
                context.print("Home Assistant: \(report.server)")
                context.print("  reachable:  \(report.reachable ? "yes" : "no")")
                context.print("  token:      \(report.tokenAccepted ? "accepted" : "not accepted")")
                if let version = report.homeAssistantVersion { context.print("  version:    \(version)") }
                if let check = report.dashboard {
                    context.print(
                        "  dashboard:  \(check.urlPath ?? "(default)") \(check.exists ? "found" : "not found")"
                    )
                    if !check.exists && !check.availableDashboards.isEmpty {
                        context.print(
                            "  dashboards that exist: \(check.availableDashboards.joined(separator: ", "))")
                    }
                }
                for missing in report.missingEntities {
                    context.print(
                        "  warning: \(missing.entityID) is missing (used at \(missing.usedAt.joined(separator: ", ")))"
                    )
                }
                for issue in report.errors { context.print("  error: \(issue.message)") }
                context.print(report.passed ? "ok" : "failed")
            }
            if !report.passed { throw ExitCode(ExitStatus.failure.rawValue) }
        }
    }
}

/// Keys a command needs that are neither in .env nor the environment (exit 78).
struct ConfigurationMissing: Error, CustomStringConvertible, ExitStatusProviding {
    var keys: [String]
    var description: String {
        "\(keys.joined(separator: ", ")) not set: add to .env (see .env.example) or export it"
    }
    var exitStatus: ExitStatus { .config }
}
