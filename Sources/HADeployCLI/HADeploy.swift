import ArgumentParser
import HADeployCore

/// hadeploy's own version (the tool, not the app it deploys).
public enum ToolVersion {
    public static let current = "0.1.0"
}

public struct HADeploy: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "hadeploy",
        abstract: "Build, version and deploy the HA Dashboard app to a matrix of iOS devices, then prove "
            + "each one loaded its dashboard.",
        discussion: """
            Targets are device names or aliases from devices.yaml (`all` = every device).
            Examples:
              hadeploy init                  adopt hadeploy in the app's repository
              hadeploy all --kiosk           deploy to every device in kiosk mode
              hadeploy ipad2 --no-build      redeploy the last build to the iPad 2
              hadeploy sim iphone            the iPhone simulator
              hadeploy mini4 ipad2 --dashboard wall-kitchen
              hadeploy plan all --json       what a deploy would do, as JSON
              hadeploy status all            every device at a glance
              hadeploy version               the app version from git tags: 1.10.0 (57)
            A version bump is just `git tag v1.2.3`.
            """,
        version: ToolVersion.current,
        subcommands: [
            InitCommand.self, DeployCommand.self, PlanCommand.self, BuildCommand.self, DevicesCommand.self,
            VersionCommand.self, RenderCommand.self, VerifyCommand.self, TrustHostCommand.self,
            RollbackCommand.self, StatusCommand.self,
            VirtualCommand.self, ReportCommand.self, MuxerCommand.self, PairCommand.self,
        ],
        defaultSubcommand: DeployCommand.self
    )

    public init() {}
}
