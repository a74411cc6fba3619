import Foundation

/// What a remote command printed and how it ended.
public struct SSHCommandOutput: Sendable, Equatable {
    /// nil when the server sent no exit status (killed by a signal, or dropbear closing early).
    public let exitStatus: Int32?
    public let stdout: Data
    public let stderr: Data

    public var succeeded: Bool { exitStatus == 0 }

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }

    /// stderr as text, trimmed and capped for an error message.
    public var stderrText: String {
        let text = String(decoding: stderr.prefix(4096), as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
