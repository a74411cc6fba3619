import CLibSSH
import Foundation

/// Uploads a directory tree with the classic SCP protocol (`scp -r -t DIR` on the server), for servers
/// without an SFTP subsystem. Written over a plain exec channel because libssh's `ssh_scp_*` API is
/// deprecated in 0.10.
///
/// Protocol (OpenSSH scp.c `sink()`): the server acks with one byte, 0 = OK, 1/2 = warning/error followed
/// by a message line. `D<mode> 0 <name>` enters a directory, `E` leaves it, `C<mode> <size> <name>` is
/// followed by the bytes and a NUL.
struct SCPSink {
    let session: SessionHandle

    private let step = "SCP upload"

    /// Creates `parent/name` holding `tree`.
    func upload(tree: LocalTree, into parent: String, name: String, progress: (UploadProgress) -> Void) throws
    {
        let channel = try session.openChannel(step: step)
        guard ssh_channel_request_exec(channel.raw, "scp -r -t \(ShellQuote.quote(parent))") == SSH_OK else {
            throw session.failure(step)
        }
        try readAck(channel)
        try send(channel, "D0755 0 \(name)\n")
        var depth: [String] = []
        var sent: Int64 = 0
        let total = tree.totalBytes
        for entry in tree.entries {
            let components = entry.path.split(separator: "/").map(String.init)
            let parents = Array(components.dropLast())
            // Leave directories that are not ancestors of this entry (entries are sorted by path).
            while depth.count > parents.count || depth != Array(parents.prefix(depth.count)) {
                depth.removeLast()
                try send(channel, "E\n")
            }
            let base = components.last ?? entry.path
            switch entry.kind {
            case .directory:
                try send(channel, "D0755 0 \(base)\n")
                depth.append(base)
            case .symlink(let target):
                throw SSHError.localFileFailed(
                    path: entry.path,
                    reason: "symbolic link to \(target) cannot be sent over SCP; enable SFTP")
            case .file(let size):
                try send(channel, "C0\(String(entry.mode, radix: 8)) \(size) \(base)\n")
                try tree.forEachChunk(of: entry) { chunk in
                    try channel.write(chunk, step: step)
                    sent += Int64(chunk.count)
                    progress(UploadProgress(bytesSent: sent, totalBytes: total, currentFile: entry.path))
                }
                try channel.write(Data([0]), step: step)
                try readAck(channel)
            }
        }
        for _ in depth { try send(channel, "E\n") }
        try send(channel, "E\n")
        _ = ssh_channel_send_eof(channel.raw)
        let status = hadeploy_ssh_channel_get_exit_status(channel.raw)
        if status != 0 {
            throw SSHError.remoteCommandFailed(
                device: session.config.name, step: step, command: "scp -r -t \(parent)",
                exitStatus: status < 0 ? nil : status, stderr: "")
        }
    }

    private func send(_ channel: ChannelHandle, _ line: String) throws {
        try channel.write(line, step: step)
        try readAck(channel)
    }

    private func readAck(_ channel: ChannelHandle) throws {
        var byte = [UInt8](repeating: 0, count: 1)
        while true {
            let n = try channel.read(into: &byte, timeoutMs: 200)
            if n == 1 { break }
            if channel.isEOF {
                throw SSHError.disconnected(
                    device: session.config.name, step: step,
                    reason: "scp on the server stopped (is scp installed?)")
            }
        }
        guard byte[0] != 0 else { return }
        var message = Data()
        var next = [UInt8](repeating: 0, count: 1)
        while message.count < 1024 {
            let n = try channel.read(into: &next, timeoutMs: 200)
            if n == 1 {
                if next[0] == 0x0A { break }
                message.append(next[0])
            } else if channel.isEOF {
                break
            }
        }
        throw SSHError.remoteCommandFailed(
            device: session.config.name, step: step, command: "scp -r -t", exitStatus: nil,
            stderr: String(decoding: message, as: UTF8.self))
    }
}
