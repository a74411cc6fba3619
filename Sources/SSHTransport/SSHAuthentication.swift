import HADeployCore

/// How hadeploy proves who it is to the SSH server.
public enum SSHAuthentication: Sendable, Equatable, CustomStringConvertible {
    /// A private key file (ed25519 or RSA, OpenSSH or PEM format), optionally encrypted.
    case privateKey(path: String, passphrase: Secret?)
    /// The keys held by an ssh-agent; `socketPath` nil means `$SSH_AUTH_SOCK` of this process.
    case agent(socketPath: String?)
    /// A password. Only ever from a `Secret` that the caller read from .env or the environment.
    case password(Secret)

    public var description: String {
        switch self {
        case .privateKey(let path, _): return "key \(path)"
        case .agent: return "ssh-agent"
        case .password: return "password"
        }
    }
}
