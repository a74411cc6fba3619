/// Deadlines for every blocking step of an SSH connection, in seconds.
///
/// Each libssh call runs under one of these; when it passes, the connection is shut down so the
/// blocked call returns (see `SessionExecutor`).
public struct SSHTimeouts: Sendable, Equatable {
    /// TCP connect plus key exchange and host key check.
    public var connect: Double
    /// User authentication (all attempts together).
    public var authentication: Double
    /// A remote command, unless the caller gives its own.
    public var command: Double
    /// Opening the SFTP subsystem. libssh's `sftp_init` never returns against dropbear when the server's
    /// sftp-server cannot run (PLATFORM-NOTES §2), so keep this short: SCP is tried next.
    public var sftpInit: Double
    /// A whole upload.
    public var transfer: Double

    public init(
        connect: Double = 20, authentication: Double = 20, command: Double = 60, sftpInit: Double = 10,
        transfer: Double = 600
    ) {
        self.connect = connect
        self.authentication = authentication
        self.command = command
        self.sftpInit = sftpInit
        self.transfer = transfer
    }
}
