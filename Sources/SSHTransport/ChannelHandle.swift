import CLibSSH
import Foundation

/// Owns one `ssh_channel`. Keeps its session alive: libssh frees channels with the session.
final class ChannelHandle {
    let raw: ssh_channel
    let session: SessionHandle

    init(raw: ssh_channel, session: SessionHandle) {
        self.raw = raw
        self.session = session
    }

    deinit {
        if ssh_channel_is_closed(raw) == 0 { ssh_channel_close(raw) }
        ssh_channel_free(raw)
    }

    /// Writes all of `data` (blocking on the channel window).
    func write(_ data: Data, step: String) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < bytes.count {
                let chunk = min(bytes.count - offset, 64 * 1024)
                let written = ssh_channel_write(raw, bytes.baseAddress! + offset, UInt32(chunk))
                if written <= 0 { throw session.failure(step) }
                offset += Int(written)
            }
        }
    }

    func write(_ text: String, step: String) throws {
        try write(Data(text.utf8), step: step)
    }

    /// Reads up to `count` bytes, waiting at most `timeoutMs`; 0 means nothing yet or end of stream.
    func read(into buffer: inout [UInt8], timeoutMs: Int32) throws -> Int {
        let n = buffer.withUnsafeMutableBytes {
            ssh_channel_read_timeout(raw, $0.baseAddress, UInt32($0.count), 0, timeoutMs)
        }
        if n == SSH_AGAIN || n == SSH_EOF { return 0 }
        if n < 0 { throw session.failure("reading from the channel") }
        return Int(n)
    }

    var isEOF: Bool { ssh_channel_is_eof(raw) != 0 }
}
