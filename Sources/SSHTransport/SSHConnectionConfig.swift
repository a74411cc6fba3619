import Foundation
import HADeployCore

/// Where and how to open one SSH connection.
public struct SSHConnectionConfig: Sendable, Equatable {
    /// The name used in messages (the device's name in devices.yaml).
    public var name: String
    public var host: String
    public var port: Int
    public var user: String
    public var authentication: SSHAuthentication
    /// The known_hosts file checked (and written by `HostKeyTrust`). See `KnownHostsFile.defaultPath`.
    public var knownHostsPath: String
    /// Also offer SHA-1 key exchange, ssh-rsa host keys and user signatures, CBC ciphers and hmac-sha1,
    /// for the OpenSSH 6.x of an iOS 9 jailbreak. Per connection, never global.
    public var legacyAlgorithms: Bool
    public var timeouts: SSHTimeouts

    public init(
        name: String? = nil, host: String, port: Int = 22, user: String = "root",
        authentication: SSHAuthentication, knownHostsPath: String,
        legacyAlgorithms: Bool = false, timeouts: SSHTimeouts = SSHTimeouts()
    ) {
        self.name = name ?? host
        self.host = host
        self.port = port
        self.user = user
        self.authentication = authentication
        self.knownHostsPath = knownHostsPath
        self.legacyAlgorithms = legacyAlgorithms
        self.timeouts = timeouts
    }

    /// `knownHostsPath` with a leading `~` expanded (devices.yaml values may use it; libssh and our own
    /// file edits must agree on one path).
    var resolvedKnownHostsPath: String { Self.expandTilde(knownHostsPath) }

    /// Against the account's own home: the paths go to libssh, which reads the machine's files.
    static func expandTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return LiveFileSystem().homeDirectory.path + path.dropFirst()
    }

    /// `host:port` as shown in messages.
    public var address: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Parses `ssh://user@host:port` (the `usb_host` form of devices.yaml); the rest comes from `base`.
    public static func parse(
        url: String, authentication: SSHAuthentication, knownHostsPath: String, name: String? = nil
    )
        throws -> SSHConnectionConfig
    {
        guard let components = URLComponents(string: url), components.scheme == "ssh",
            let host = components.host, !host.isEmpty
        else {
            throw SSHError.invalidConfiguration("'\(url)' is not an ssh://[user@]host[:port] address")
        }
        return SSHConnectionConfig(
            name: name ?? host, host: host, port: components.port ?? 22, user: components.user ?? "root",
            authentication: authentication, knownHostsPath: knownHostsPath)
    }
}
