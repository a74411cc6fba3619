import ArgumentParser
import HADeployCore
import HADeployKit
import Versioning

struct VersionCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "The app's version from git: nearest v* tag and commit count. Never edits a file.",
        discussion: """
            With APP_STORE_BUILD_NUMBER_FLOOR set (.env or the environment; the app's
            release workflow sets 162), a build number that does not exceed it is
            printed and the command fails: App Store Connect would refuse it.

            Examples:
              hadeploy version           1.10.0 (57)
              hadeploy version --json    {"marketingVersion": "1.10.0", "buildNumber": 57,
                                          "tag": "v1.10.0", ...}
              git tag v1.11.0            a version bump
            """)

    @Flag(
        name: .long,
        help: "Print marketingVersion, buildNumber, tag, commitsSinceTag, dirty, shallow as JSON.")
    var json = false

    @Flag(name: .customLong("allow-shallow"), help: "Accept a shallow clone's (wrong) build number.")
    var allowShallow = false

    func run(_ context: HADeployContext) async throws {
        let workspace = Workspace(context: context, configPath: "devices.yaml", envFilePath: ".env")
        let version = try await workspace.loadVersion(allowShallow: allowShallow)
        context.print(json ? try PlanPrinter.json(version) : version.description)
        try BuildNumberFloor.check(version, variables: try workspace.loadVariables().values)
    }
}
