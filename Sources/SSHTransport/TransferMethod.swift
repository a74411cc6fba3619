/// How files reach the device.
public enum TransferMethod: String, Sendable, Equatable, CaseIterable {
    /// SFTP, falling back to SCP when the server has no working SFTP subsystem.
    case auto
    case sftp
    case scp
}
