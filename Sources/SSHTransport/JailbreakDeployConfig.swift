/// Everything needed to deploy to one jailbroken device over SSH; the lead fills it from devices.yaml.
public struct JailbreakDeployConfig: Sendable, Equatable {
    public var connection: SSHConnectionConfig
    /// Where apps live; tests point it at a scratch directory.
    public var installDirectory: String
    /// `user:group` given to the installed app (`{owner}` in `commands.permissions`).
    public var owner: String
    public var transfer: TransferMethod
    public var commands: JailbreakCommands
    /// Deadline for the icon cache refresh, which takes tens of seconds on an iPad 2.
    public var refreshIconsTimeout: Double

    public init(
        connection: SSHConnectionConfig, installDirectory: String = "/Applications",
        owner: String = "root:admin",
        transfer: TransferMethod = .auto, commands: JailbreakCommands = JailbreakCommands(),
        refreshIconsTimeout: Double = 180
    ) {
        self.connection = connection
        self.installDirectory = installDirectory
        self.owner = owner
        self.transfer = transfer
        self.commands = commands
        self.refreshIconsTimeout = refreshIconsTimeout
    }
}
