import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct BuildCommand: AsyncParsableCommand {
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

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let matrix = try workspace.loadMatrix()
            let (variables, _) = try workspace.loadVariables()
            let version = try await workspace.loadVersion(allowShallow: allowShallow)
            let unknown = flavour.filter { matrix.flavour(named: $0) == nil }
            if !unknown.isEmpty {
                throw ValidationError(
                    "unknown flavour \(unknown.joined(separator: ", ")) (devices.yaml has "
                        + matrix.flavours.map(\.name).joined(separator: ", ") + ")")
            }
            var plan = try DeployPlanner(matrix: matrix, variables: variables, host: .current).plan(
                options: DeployOptions(targets: targets.isEmpty ? ["all"] : targets), version: version,
                deployID: "build")
            if !flavour.isEmpty {
                plan.builds.removeAll { !flavour.contains($0.flavour) }
                if plan.builds.isEmpty {
                    throw ValidationError(
                        "no device of \(targets.isEmpty ? "the matrix" : targets.joined(separator: ", ")) uses "
                            + "flavour \(flavour.joined(separator: ", ")) on this host")
                }
            }
            var builder = BuildCommandBuilder(variables: variables, version: version)
            if let tool = context.environment["HADEPLOY_XCODEBUILD"] { builder.tools["xcodebuild"] = tool }
            if let tool = context.environment["HADEPLOY_XCODEGEN"] { builder.tools["xcodegen"] = tool }
            let artifacts = try await BuildRunner(
                context: context, matrix: matrix, builder: builder, host: .current
            )
            .build(plan) { context.message($0) }
            for (flavour, artifact) in artifacts.sorted(by: { $0.key < $1.key }) {
                var path = artifact.path
                if let out {
                    let directory = context.url(for: out).appendingPathComponent(flavour)
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let target = directory.appendingPathComponent(
                        (artifact.path as NSString).lastPathComponent)
                    try? FileManager.default.removeItem(at: target)
                    try FileManager.default.copyItem(at: URL(fileURLWithPath: artifact.path), to: target)
                    path = target.path
                }
                context.print(
                    "\(flavour): \(path) (\(artifact.marketingVersion) (\(artifact.buildNumber)), \(artifact.archs.joined(separator: "+")))"
                )
            }
        }
    }
}
