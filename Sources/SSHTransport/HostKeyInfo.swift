/// The host key a server presented, and what the known_hosts file says about it.
public struct HostKeyInfo: Sendable, Equatable, CustomStringConvertible {
    public enum Status: String, Sendable, Equatable {
        /// The key matches the trusted entry.
        case trusted
        /// No entry for this host (or no known_hosts file yet).
        case unknown
        /// An entry exists with a different key of the same type.
        case changed
        /// Entries exist only for other key types: treated like `changed`.
        case otherType
    }

    /// e.g. `ssh-ed25519`, `ssh-rsa`.
    public let keyType: String
    /// OpenSSH-style `SHA256:base64` fingerprint.
    public let fingerprint: String
    public let status: Status
    /// The line `trust` writes / wrote, e.g. `[10.0.0.5]:22 ssh-rsa AAAA...`.
    public let knownHostsLine: String

    public var description: String { "\(keyType) \(fingerprint) (\(status.rawValue))" }
}
