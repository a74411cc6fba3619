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
    /// This machine's files, which libssh reads too: the known_hosts file, the key files, the home
    /// folder `~` stands for. Not part of the equality.
    public var fileSystem: any FileSystem

    public init(
        name: String? = nil, host: String, port: Int = 22, user: String = "root",
        authentication: SSHAuthentication, knownHostsPath: String, fileSystem: any FileSystem,
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
        self.fileSystem = fileSystem
    }

    public static func == (lhs: SSHConnectionConfig, rhs: SSHConnectionConfig) -> Bool {
        lhs.name == rhs.name && lhs.host == rhs.host && lhs.port == rhs.port && lhs.user == rhs.user
            && lhs.authentication == rhs.authentication && lhs.knownHostsPath == rhs.knownHostsPath
            && lhs.legacyAlgorithms == rhs.legacyAlgorithms && lhs.timeouts == rhs.timeouts
    }

    /// `knownHostsPath` with a leading `~` expanded (devices.yaml values may use it; libssh and our own
    /// file edits must agree on one path).
    var resolvedKnownHostsPath: String { expandTilde(knownHostsPath) }

    /// Against the account's own home (`fileSystem`'s): the paths go to libssh, which reads the
    /// machine's files.
    func expandTilde(_ path: String) -> String { Self.expandTilde(path, home: fileSystem.homeDirectory) }

    static func expandTilde(_ path: String, home: URL) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return home.path + path.dropFirst()
    }

    /// `host:port` as shown in messages.
    public var address: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Parses `ssh://user@host:port` (the `usb_host` form of devices.yaml); the rest comes from `base`.
    public static func parse(
        url: String, authentication: SSHAuthentication, knownHostsPath: String, fileSystem: any FileSystem,
        name: String? = nil
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
            authentication: authentication, knownHostsPath: knownHostsPath, fileSystem: fileSystem)
    }
}
