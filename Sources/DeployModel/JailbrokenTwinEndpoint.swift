/// Where a jailbroken twin (`--virtual` for an SSH device, run as root) listens, and how to log in.
public struct JailbrokenTwinEndpoint: Sendable, Hashable {
    public var port: Int
    /// Private key the twin's root accepts.
    public var key: String
    /// known_hosts holding the twin's host key.
    public var knownHosts: String

    public init(port: Int, key: String, knownHosts: String) {
        self.port = port
        self.key = key
        self.knownHosts = knownHosts
    }
}
