import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct RollbackCommand: AsyncParsableCommand {
    struct NotLoaded: Error, CustomStringConvertible {
        var device: String
        var description: String {
            "the restored app on \(device) did not show a loaded dashboard in its log within the verification "
                + "timeout; its log is /var/mobile/Documents/ha-log.txt on the device"
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Put back the app and its settings a deploy replaced on a jailbroken device.",
        discussion: """
            Every deploy to a jailbroken device first archives the installed app and copies
            its preferences (with a SHA-256) into
            /var/mobile/Library/HADashboard-backups/<bundle id>/<time>/ on the device.
            rollback restores the newest backup (or --backup NAME) byte for byte, restarts
            the app and reads its log to see the dashboard load.
              hadeploy rollback ipad2
              hadeploy rollback ipad2 --list
              hadeploy rollback ipad2 --backup 20261123-094500-1a2b
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(help: ArgumentHelp("The jailbroken device from devices.yaml.", valueName: "device"))
    var device: String

    @Option(
        name: .long, help: ArgumentHelp("The backup to restore (default: the newest).", valueName: "name"))
    var backup: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The app's bundle id (default: BUNDLE_ID from .env).", valueName: "id"))
    var bundleID: String?

    @Flag(name: .long, help: "List the backups on the device and change nothing.")
    var list = false

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let (variables, _) = try workspace.loadVariables()
            let rollback = try JailbreakRollback(
                matrix: try workspace.loadMatrix(), variables: variables, environment: context.environment,
                device: device, bundleID: bundleID,
                stateDirectory: context.url(for: ".hadeploy"))
            if list {
                let names = try await rollback.backups()
                context.print(names.isEmpty ? "no backups on \(device)" : names.joined(separator: "\n"))
                return
            }
            let outcome = try await rollback.run(backup: backup)
            context.print(
                "\(device): restored \(outcome.report.installedPath) from \(outcome.report.backup)"
                    + (outcome.report.preferencesRestored
                        ? " with its preferences" : " (it had no preferences)"))
            for line in outcome.evidence { context.print("  \(line)") }
            guard outcome.loaded else { throw NotLoaded(device: device) }
            context.print("\(device): dashboard loaded")
        }
    }
}
