import Foundation

/// The `hadeploy trust-host` side: look at a server's host key and, when the user says so, trust it.
///
/// Nothing here runs implicitly: a deploy only ever checks (`SSHConnection.connect`).
public enum HostKeyTrust {
    /// Connects (without logging in) and reports the host key and its known_hosts status.
    public static func scan(_ config: SSHConnectionConfig) async throws -> HostKeyInfo {
        let (executor, session) = try await SSHConnection.connectUnauthenticated(config)
        defer { executor.abort(reason: "scan done") }
        return try await executor.run("host key check", timeout: config.timeouts.connect) {
            try session.hostKey()
        }
    }

    /// Writes the server's current host key to `config.knownHostsPath` (a leading `~` is expanded).
    ///
    /// - Parameters:
    ///   - expectedFingerprint: the `SHA256:…` the user confirmed (shown by `scan`, or typed from the
    ///     device); if the server now presents another key, nothing is written.
    ///   - replace: remove existing entries for this host first; without it a changed key is refused.
    /// - Returns: the key as now trusted.
    public static func trust(
        _ config: SSHConnectionConfig, expectedFingerprint: String, replace: Bool = false
    ) async throws -> HostKeyInfo {
        let (executor, session) = try await SSHConnection.connectUnauthenticated(config)
        defer { executor.abort(reason: "trust done") }
        return try await executor.run("trusting the host key", timeout: config.timeouts.connect) {
            let info = try session.hostKey()
            if expectedFingerprint != info.fingerprint {
                throw SSHError.hostKeyChanged(
                    device: config.name, address: config.address, keyType: info.keyType,
                    fingerprint: info.fingerprint,
                    knownHosts: "the fingerprint you confirmed (\(expectedFingerprint))")
            }
            switch info.status {
            case .trusted:
                return info
            case .changed, .otherType:
                guard replace else {
                    throw SSHError.hostKeyChanged(
                        device: config.name, address: config.address, keyType: info.keyType,
                        fingerprint: info.fingerprint, knownHosts: config.resolvedKnownHostsPath)
                }
                try KnownHostsFile.removeEntries(
                    host: config.host, port: config.port, path: config.resolvedKnownHostsPath,
                    fileSystem: config.fileSystem)
            case .unknown:
                break
            }
            try session.writeKnownHostsEntry()
            return HostKeyInfo(
                keyType: info.keyType, fingerprint: info.fingerprint, status: .trusted,
                knownHostsLine: info.knownHostsLine)
        }
    }
}
