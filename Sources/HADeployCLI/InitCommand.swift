import ArgumentParser
import Foundation
import HADeployAdopt
import HADeployCore
import HADeployKit

struct InitCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Adopt hadeploy in the app's repository: devices.yaml, the project template, .env.example.",
        discussion: """
            Run in the app repository's root (where the XcodeGen project.yml is). Writes
            devices.yaml (the old scripts' targets and .env keys),
            Templates/project.yml.mustache made from project.yml (the bundle id
            placeholder and DEVELOPMENT_TEAM become {{BUNDLE_ID}} and {{APPLE_TEAM_ID}}),
            .env.example (an existing one only gets the missing keys added) and
            .gitignore lines; then lists the keys to fill in and the devices it sees.
            Examples:
              hadeploy init
              hadeploy init --dry-run          what it would write
              hadeploy init --force            replace files that already exist
              hadeploy init --no-scan          skip looking for devices
            """)

    @Flag(name: .long, help: "Replace devices.yaml and the template when they already exist.")
    var force = false

    @Flag(name: .customLong("dry-run"), help: "Print what would be written; write nothing.")
    var dryRun = false

    @Flag(name: .customLong("no-scan"), help: "Do not look for devices and simulators on this host.")
    var noScan = false

    @Flag(name: .long, help: "Print the plan (files with their content, keys, devices) as JSON.")
    var json = false

    func run(_ context: HADeployContext) async throws {
        let workspace = Workspace(context: context, configPath: "devices.yaml", envFilePath: ".env")
        let (variables, _) = try workspace.loadVariables()
        var seen: [SeenDevice] = []
        var notes: [String] = []
        if !noScan {
            var scan = HostDeviceScan(
                host: .current, runner: context.runner,
                rosettaSimConfigured: !(variables["ROSETTASIM_CTL"] ?? "").isEmpty,
                temporaryDirectory: context.fileSystem.temporaryDirectory, fileSystem: context.fileSystem,
                clock: context.clock)
            scan.developerDirectory = HostDeviceScan.developerDirectory(variables)
            scan.usbmuxdAddress = context.environment["USBMUXD_SOCKET_ADDRESS"].flatMap {
                $0.isEmpty ? nil : $0
            }
            (seen, notes) = await scan.scan()
        }
        let adopter = ProjectAdopter(
            root: context.currentDirectory, variables: variables, fileSystem: context.fileSystem)
        let plan = try adopter.plan(seen: seen, scanNotes: notes)
        var written: [AdoptionPlan.PlannedFile]?
        if !dryRun { written = try adopter.write(plan, force: force) }
        context.print(json ? try PlanPrinter.json(plan) : ProjectAdopter.text(plan, written: written))
    }
}
