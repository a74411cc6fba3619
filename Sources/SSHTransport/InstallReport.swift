/// What `JailbreakDeployer.install` did.
public struct InstallReport: Sendable, Equatable {
    /// e.g. `/Applications/HADashboard.app`.
    public let installedPath: String
    /// false: the installed copy already had this content hash and nothing was sent.
    public let changed: Bool
    /// How the files went; nil when skipped.
    public let method: TransferMethod?
    public let bytesSent: Int64
    /// SHA-256 of the app's contents, as stored next to it in `.<Name>.app.hadeploy-hash`.
    public let contentHash: String
    public let seconds: Double
}
