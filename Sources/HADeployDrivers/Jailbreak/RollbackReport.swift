/// What `JailbreakDeployer.rollback` restored.
public struct RollbackReport: Sendable, Equatable {
    /// The backup's directory on the device.
    public let backup: String
    public let installedPath: String
    /// false: the backup held no preferences, so the current ones were removed (as before that deploy).
    public let preferencesRestored: Bool
}
