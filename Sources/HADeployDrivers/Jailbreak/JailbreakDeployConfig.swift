import SSHTransport

/// Everything needed to deploy to one jailbroken device over SSH; the lead fills it from devices.yaml.
public struct JailbreakDeployConfig: Sendable, Equatable {
    public var connection: SSHConnectionConfig
    /// Where apps live (`commands.install_dir` in devices.yaml); tests point it at a scratch directory.
    public var installDirectory: String
    /// `user:group` given to the installed app (`{owner}` in `commands.permissions`).
    public var owner: String
    public var transfer: TransferMethod
    public var commands: JailbreakCommands
    /// Deadline for the icon cache refresh, which takes tens of seconds on an iPad 2.
    public var refreshIconsTimeout: Double
    /// Deadline for the launch command.
    public var launchTimeout: Double
    /// The mobile user's home: preferences, backups, caches and the app's log live under it.
    public var mobileDirectory: String
    /// `user:group` of the preferences plist (the app runs as `mobile`).
    public var preferencesOwner: String
    /// Where the app's screenshot trigger and image live (`/tmp/take_screenshot`, `/tmp/screenshot.png`).
    public var temporaryDirectory: String
    /// How many backups per app stay on the device.
    public var backupsKept: Int
    /// iOS 9 and 10: remove `_CodeSignature` and `embedded.mobileprovision` on the host before sending,
    /// as Apple's signature gets in the way of `ldid` there (the entitlements are read first).
    public var stripAppleSignature: Bool
    /// Deadline for the app's own screenshot (it writes one ~3 s after its next dashboard rebuild).
    public var screenshotTimeout: Double

    public init(
        connection: SSHConnectionConfig, installDirectory: String = "/Applications",
        owner: String = "root:admin",
        transfer: TransferMethod = .auto, commands: JailbreakCommands = JailbreakCommands(),
        refreshIconsTimeout: Double = 180, launchTimeout: Double = 60,
        mobileDirectory: String = "/var/mobile",
        preferencesOwner: String = "mobile:mobile", temporaryDirectory: String = "/tmp", backupsKept: Int = 5,
        stripAppleSignature: Bool = false, screenshotTimeout: Double = 20
    ) {
        self.connection = connection
        self.installDirectory = installDirectory
        self.owner = owner
        self.transfer = transfer
        self.commands = commands
        self.refreshIconsTimeout = refreshIconsTimeout
        self.launchTimeout = launchTimeout
        self.mobileDirectory = mobileDirectory
        self.preferencesOwner = preferencesOwner
        self.temporaryDirectory = temporaryDirectory
        self.backupsKept = backupsKept
        self.stripAppleSignature = stripAppleSignature
        self.screenshotTimeout = screenshotTimeout
    }

    /// The keys `apply(commandOverrides:)` understands (devices.yaml `ssh.commands`).
    public static let commandKeys = [
        "install_dir", "refresh", "launch", "kill", "screenshot", "permissions", "sign",
    ]

    /// Applies devices.yaml `ssh.commands` (install_dir, refresh, launch, kill, screenshot, permissions);
    /// throws on an unknown key or an unknown placeholder, so typos fail before anything runs.
    public mutating func apply(commandOverrides: [String: String]) throws {
        // All or nothing: a refused override leaves the config as it was.
        var updated = self
        for (key, value) in commandOverrides {
            switch key {
            case "install_dir": updated.installDirectory = value
            case "refresh": updated.commands.refreshIcons = value
            case "launch": updated.commands.launch = value
            case "kill": updated.commands.kill = value
            case "screenshot": updated.commands.screenshot = value
            case "permissions": updated.commands.permissions = value
            case "sign": updated.commands.sign = value
            default:
                throw SSHError.invalidConfiguration(
                    "unknown ssh command '\(key)'; known: \(Self.commandKeys.joined(separator: ", "))")
            }
        }
        try updated.commands.validate()
        self = updated
    }
}
