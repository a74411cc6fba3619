import CLibSSH
import Foundation

/// Owns one `sftp_session` (its channel included). Keeps the SSH session alive.
final class SFTPHandle {
    let raw: sftp_session
    let session: SessionHandle

    /// Why SFTP cannot be used on this server, so the caller can fall back to SCP.
    struct Unavailable: Error {
        let reason: String
    }

    /// Opens the subsystem. `sftp_init` must run under `SessionExecutor.guarded`: against dropbear with
    /// no runnable sftp-server it never returns (PLATFORM-NOTES §2).
    init(session: SessionHandle, executor: SessionExecutor, initTimeout: Double) throws {
        guard let raw = sftp_new(session.raw) else {
            throw Unavailable(reason: "the server refused the sftp subsystem (\(session.lastError))")
        }
        self.raw = raw
        self.session = session
        let rc: Int32
        do {
            rc = try executor.guarded("starting SFTP", timeout: initTimeout) { sftp_init(raw) }
        } catch {
            throw Unavailable(
                reason:
                    "the SFTP subsystem did not answer within \(Int(initTimeout)) s (the connection was closed)"
            )
        }
        if rc != SSH_OK {
            throw Unavailable(reason: "sftp_init failed (\(session.lastError))")
        }
    }

    deinit {
        sftp_free(raw)
    }

    /// Ends the subsystem and waits (bounded) until the server's sftp-server has exited.
    ///
    /// dropbear 2022.83 closed the *next* session channel right after opening it when the previous
    /// sftp-server exited only after that open (seen in libssh packet logs: EOF+close for the new channel
    /// in the same batch as its confirmation). Waiting for the exit status first avoids that.
    func finish() {
        guard let channel = raw.pointee.channel else { return }
        _ = ssh_channel_send_eof(channel)
        // Waits for exit-status or close. libssh bounds this wait by SSH_OPTIONS_TIMEOUT (seen: 15 s with
        // a 15 s option), so a server that never answers costs that long, not the connection.
        _ = hadeploy_ssh_channel_get_exit_status(channel)
    }

    func failure(_ step: String, path: String) -> SSHError {
        if ssh_is_connected(session.raw) == 0 {
            return .disconnected(device: session.config.name, step: step, reason: session.lastError)
        }
        let code = sftp_get_error(raw)
        let reason: String
        switch code {
        case SSH_FX_NO_SUCH_FILE, SSH_FX_NO_SUCH_PATH: reason = "no such file or directory: \(path)"
        case SSH_FX_PERMISSION_DENIED: reason = "permission denied: \(path)"
        case SSH_FX_FILE_ALREADY_EXISTS: reason = "already exists: \(path)"
        case SSH_FX_WRITE_PROTECT, SSH_FX_NO_MEDIA: reason = "read-only file system: \(path)"
        case SSH_FX_CONNECTION_LOST, SSH_FX_NO_CONNECTION:
            return .disconnected(device: session.config.name, step: step, reason: session.lastError)
        default: reason = "SFTP error \(code) on \(path) (\(session.lastError))"
        }
        return .sessionFailed(device: session.config.name, step: step, reason: reason)
    }

    /// Writes a prefix of `bytes` (never empty) and returns its length, which may be less than
    /// `bytes.count`: libssh ≥ 0.11 sends at most the server's `max_write_length` per `sftp_write`, and
    /// 32 KiB when the server lacks the `limits@openssh.com` extension (OpenSSH < 8.7, dropbear's
    /// sftp-server). A short write is progress; only a write of nothing is a failure.
    private func write(_ file: sftp_file, _ bytes: Slice<UnsafeRawBufferPointer>, step: String, path: String)
        throws -> Int
    {
        let rest = UnsafeRawBufferPointer(rebasing: bytes)
        let written = sftp_write(file, rest.baseAddress, rest.count)
        guard written > 0, written <= rest.count else { throw failure(step, path: path) }
        return written
    }

    /// Uploads `tree` as the new directory `remoteRoot` (which must not exist yet).
    func upload(tree: LocalTree, to remoteRoot: String, progress: (UploadProgress) -> Void) throws {
        let step = "SFTP upload"
        guard sftp_mkdir(raw, remoteRoot, 0o755) == 0 else { throw failure(step, path: remoteRoot) }
        var sent: Int64 = 0
        let total = tree.totalBytes
        for entry in tree.entries {
            let path = remoteRoot + "/" + entry.path
            switch entry.kind {
            case .directory:
                guard sftp_mkdir(raw, path, mode_t(entry.mode)) == 0 else { throw failure(step, path: path) }
            case .symlink(let target):
                guard sftp_symlink(raw, target, path) == 0 else { throw failure(step, path: path) }
            case .file:
                guard let file = sftp_open(raw, path, O_WRONLY | O_CREAT | O_TRUNC, mode_t(entry.mode)) else {
                    throw failure(step, path: path)
                }
                var closed = false
                defer { if !closed { sftp_close(file) } }
                try tree.forEachChunk(of: entry) { chunk in
                    try chunk.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let written = try write(file, bytes[offset...], step: step, path: path)
                            offset += written
                            sent += Int64(written)
                            progress(
                                UploadProgress(bytesSent: sent, totalBytes: total, currentFile: entry.path))
                        }
                    }
                }
                closed = true
                guard sftp_close(file) == SSH_OK else { throw failure(step, path: path) }
                // The server's umask may have trimmed the mode given to open.
                guard sftp_chmod(raw, path, mode_t(entry.mode)) == 0 else { throw failure(step, path: path) }
            }
        }
    }
}
