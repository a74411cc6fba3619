import SSHTransport

/// What `JailbreakDeployer.install` did.
public struct InstallReport: Sendable, Equatable {
    /// e.g. `/Applications/HADashboard.app`.
    public let installedPath: String
    /// false: the installed copy already had this content and nothing was sent.
    public let changed: Bool
    /// How the files went; nil when skipped.
    public let method: TransferMethod?
    public let bytesSent: Int64
    /// SHA-256 of the app's contents, as stored next to it in `.<Name>.app.hadeploy-hash`.
    public let contentHash: String
    public let seconds: Double
    /// The files sent (relative to the app), only the changed ones when an older copy was installed.
    public var filesSent: [String] = []
    /// The files removed from the installed copy because the new app no longer has them.
    public var filesRemoved: [String] = []
    /// The backup taken before anything changed (`/var/mobile/Library/HADashboard-backups/<bundle>/<time>`).
    public var backup: String?
    /// Whether `ldid -S` re-signed the executable (false when the device has no `ldid`).
    public var signed = false
    /// Whether it was signed with the build's own entitlements (`ldid -S<file>`), application-identifier
    /// among them: without them the app's keychain fails, and the app forgets its login at its next
    /// launch without hadeploy (1.3 keeps it only there).
    public var keychainEntitled = false
    /// Why the app was signed without its entitlements, when it was.
    public var entitlementsProblem: String?
}
