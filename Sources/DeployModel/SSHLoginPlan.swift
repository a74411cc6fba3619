/// How hadeploy logs in over SSH: a password or a key by reference, or the ssh-agent.
public enum SSHLoginPlan: Sendable, Hashable, Codable {
    /// `password_env:` — the password is read from the environment at the last moment.
    case password(SecretReference)
    /// A private key file; the ssh-agent when the file is not there at run time.
    case key(path: String)
    /// The ssh-agent of the run (`SSH_AUTH_SOCK` of its environment).
    case agent
}
