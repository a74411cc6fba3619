import Foundation

extension SSHConnection {
    /// Sends the tree as `parent/name` over `connection`, SFTP first when `method` allows; returns the method used.
    public static func upload(
        tree: LocalTree, into parent: String, name: String, method: TransferMethod, device: String,
        on connection: inout SSHConnection, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> TransferMethod {
        let config = connection.config
        let timeouts = config.timeouts
        let report: @Sendable (UploadProgress) -> Void = { progress?($0) }
        let executor = connection.executor
        let destination = "\(parent)/\(name)"
        if method != .scp {
            let sftpResult: Result<Void, SFTPHandle.Unavailable> = try await connection.withSession(
                "SFTP upload", timeout: timeouts.sftpInit + timeouts.transfer
            ) { session in
                let sftp: SFTPHandle
                do {
                    sftp = try SFTPHandle(
                        session: session, executor: executor, initTimeout: timeouts.sftpInit)
                } catch let unavailable as SFTPHandle.Unavailable {
                    return .failure(unavailable)
                }
                try sftp.upload(tree: tree, to: destination, progress: report)
                sftp.finish()
                return .success(())
            }
            switch sftpResult {
            case .success:
                return .sftp
            case .failure(let unavailable):
                guard method == .auto else {
                    throw SSHError.sessionFailed(
                        device: device, step: "SFTP upload", reason: unavailable.reason)
                }
            }
        }
        if connection.executor.abortedReason != nil {
            // sftp_init timed out and the watchdog closed the connection: SCP needs a new one.
            await connection.close()
            connection = try await SSHConnection.connect(config)
        }
        try await connection.withSession("SCP upload", timeout: timeouts.transfer) { session in
            try SCPSink(session: session).upload(tree: tree, into: parent, name: name, progress: report)
        }
        return .scp
    }
}
