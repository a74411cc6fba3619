import ArgumentParser
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit

struct RollbackCommand: ContextCommand {
    struct NotLoaded: Error, CustomStringConvertible {
        var device: String
        var log = "/var/mobile/Documents/ha-log.txt on the device"
        var description: String {
            "the restored app on \(device) did not show a loaded dashboard in its log within the verification "
                + "timeout; its log is \(log)"
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Put back the app (and its settings) a deploy replaced on a jailbroken device or the Mac.",
        discussion: """
            Every deploy to a jailbroken device first archives the installed app and copies
            its preferences (with a SHA-256) into
            /var/mobile/Library/HADashboard-backups/<bundle id>/<time>/ on the device.
            rollback restores the newest backup (or --backup NAME) byte for byte, restarts
            the app and reads its log to see the dashboard load.
              hadeploy rollback ipad2
              hadeploy rollback ipad2 --list
              hadeploy rollback ipad2 --backup 20261123-094500-1a2b
            On the Mac, the copy the last deploy replaced (kept in ~/Library/Application
            Support/hadeploy/mac/<bundle id>/previous) and the installed one change places;
            the app is reopened (its settings stay as they are).
              hadeploy rollback mac
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(
        help: ArgumentHelp("The jailbroken device (or the Mac) from devices.yaml.", valueName: "device"))
    var device: String

    @Option(
        name: .long, help: ArgumentHelp("The backup to restore (default: the newest).", valueName: "name"))
    var backup: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The app's bundle id (default: the app the last deploy from here installed, else BUNDLE_ID "
                + "from .env, else the app the device keeps backups of).", valueName: "id"))
    var bundleID: String?

    @Flag(name: .long, help: "List the backups on the device and change nothing.")
    var list = false

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let (variables, _) = try workspace.loadVariables()
        let matrix = try workspace.loadMatrix()
        if let target = try TargetResolver(matrix: matrix).resolve([device]).first,
            BackendQuestions.rollsBackTheMacApp(target)
        {
            try await rollbackMac(matrix: matrix, variables: variables, context: context)
            return
        }
        let rollback = try JailbreakRollback(
            matrix: matrix, variables: variables, environment: context.environment,
            device: device, bundleID: bundleID,
            stateDirectory: context.url(for: ".hadeploy"), fileSystem: context.fileSystem,
            clock: context.clock,
            records: .project(context))
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

    func rollbackMac(matrix: DeviceMatrix, variables: [String: String], context: HADeployContext) async throws
    {
        guard backup == nil else {
            throw ValidationError("the Mac keeps one earlier copy: rollback mac takes no --backup")
        }
        let rollback = try MacRollback(
            matrix: matrix, variables: variables, device: device, bundleID: bundleID, host: .current,
            runner: context.runner, fileSystem: context.fileSystem, clock: context.clock,
            records: .project(context))
        if list {
            let previous = try await rollback.previous()
            context.print(
                previous.map { "\($0.marketingVersion) (\($0.buildNumber)): \($0.path)" }
                    ?? "no earlier copy of the app on \(device)")
            return
        }
        let outcome = try await rollback.run()
        context.print(
            "\(device): reopened \(outcome.restored.marketingVersion) (\(outcome.restored.buildNumber)) "
                + "from \(outcome.restored.path)")
        for line in outcome.evidence { context.print("  \(line)") }
        guard outcome.loaded else {
            throw NotLoaded(device: device, log: "~/Documents/ha-log.txt on this Mac")
        }
        context.print("\(device): dashboard loaded")
    }
}
