import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct BuildCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Build each flavour the targets need, once, with its own Xcode.",
        discussion: """
            Flavours sharing an Xcode build one after another; different Xcodes side by
            side. A flavour whose inputs (source tree, uncommitted changes, settings,
            version, Xcode) did not change reuses its previous artifact. Examples:
              hadeploy build all
              hadeploy build ipad2 --out dist/   → dist/legacy/HADashboard-1.2.3-57.ipa
              hadeploy build --flavour legacy    one flavour (a CI job per Xcode)
              hadeploy plan all --json           the exact build commands, secrets as ***
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(help: ArgumentHelp("Devices, aliases or groups whose flavours to build.", valueName: "target"))
    var targets: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Build only this flavour (repeatable); without targets, for every device using it.",
            valueName: "name"))
    var flavour: [String] = []

    @Option(name: .long, help: ArgumentHelp("Copy the artifacts to DIR/<flavour>/.", valueName: "dir"))
    var out: String?

    @Flag(name: .customLong("allow-shallow"), help: "Accept a shallow clone's (wrong) build number.")
    var allowShallow = false

    func validate() throws {
        if targets.isEmpty && flavour.isEmpty {
            throw ValidationError(
                "name at least one target or --flavour, e.g. `hadeploy build all` or `hadeploy build --flavour legacy`"
            )
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        let version = try await workspace.loadVersion(allowShallow: allowShallow)
        let built = try await workspace.build(
            matrix: matrix, variables: variables, version: version, targets: targets, flavours: flavour,
            out: out.map { context.url(for: $0) }
        ) { context.message($0) }
        for item in built {
            let artifact = item.artifact
            context.print(
                "\(item.flavour): \(item.path) (\(artifact.marketingVersion) (\(artifact.buildNumber)), "
                    + "\(artifact.archs.joined(separator: "+")))")
        }
    }
}
