import ArgumentParser
import DeployModel
import Foundation
import HADeployCore
import HADeployKit

struct PlanCommand: ContextCommand {
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
              hadeploy plan all --virtual --json    the virtual twins' plan, with UDIDs
            With HADEPLOY_PLAN_KEY set, --json signs the plan (HMAC-SHA256): a
            `deploy --plan` with the same key set runs only plans signed with it.
            """)

    @OptionGroup var project: ProjectOptions
    @OptionGroup var arguments: DeployArguments

    @Flag(name: .long, help: "Print the plan as JSON.")
    var json = false

    @Option(
        name: .customLong("as-host"),
        help: ArgumentHelp("Plan as on a macos or linux host (default: this one).", valueName: "os"))
    var asHost: String?

    var host: HostPlatform? {
        get throws {
            switch asHost?.lowercased() {
            case nil: return nil
            case "macos", "mac", "darwin": return .macOS
            case "linux": return .linux
            case let other?: throw ValidationError("--as-host takes macos or linux, not '\(other)'")
            }
        }
    }

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Plan as a deploy with --report DIR would run (with screenshots).", valueName: "dir"))
    var report: String?

    func validate() throws {
        if arguments.targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy plan all`")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let inputs = try await PlanInputs.make(
            workspace: workspace, arguments: arguments, screenshots: report != nil, host: try host)
        await inputs.twins?.stop()
        if json {
            return context.print(try PlanSignature.json(inputs.plan, environment: context.environment))
        }
        // Given builds are read where they are (hashes checked), for what their profile says per device.
        var artifacts: [String: Artifact] = [:]
        if case .files = inputs.plan.artifacts {
            do {
                artifacts = try inputs.plan.artifacts.artifacts(
                    for: inputs.plan, host: Topology.current(environment: context.environment).host,
                    copyingInto: nil, now: context.clock.now(), in: context.fileSystem)
            } catch {
                context.message("warning: the builds could not be read for their profiles: \(error)")
            }
        }
        context.print(PlanPrinter.text(inputs.plan, artifacts: artifacts, now: context.now()))
    }
}
