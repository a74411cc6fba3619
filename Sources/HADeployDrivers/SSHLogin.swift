import Foundation
import HADeployCore
import SSHTransport

/// How hadeploy logs in to the machines it reaches over SSH on its own behalf (a USB host, a build
/// host) — not jailbroken devices, whose login is in devices.yaml.
public enum SSHLogin {
    /// The key named by `keyVariable` (e.g. `BUILD_HOST_SSH_KEY`); else the ssh-agent when one is
    /// running (an encrypted key lives there); else `~/.ssh/id_ed25519` or `~/.ssh/id_rsa`; else the
    /// agent anyway, so the error names it.
    public static func authentication(
        keyVariable: String, variables: [String: String], fileSystem: any FileSystem
    ) -> SSHAuthentication {
        let home = variables["HOME"] ?? fileSystem.homeDirectory.path
        if let key = variables[keyVariable], !key.isEmpty {
            return .privateKey(path: key, passphrase: nil)
        }
        if let agent = variables["SSH_AUTH_SOCK"], !agent.isEmpty {
            return .agent(socketPath: agent)
        }
        if let key = ["\(home)/.ssh/id_ed25519", "\(home)/.ssh/id_rsa"].first(where: {
            fileSystem.fileExists(atPath: $0)
        }) {
            return .privateKey(path: key, passphrase: nil)
        }
        return .agent(socketPath: nil)
    }

    /// hadeploy's own known_hosts (`KnownHostsFile.defaultPath`: `HADEPLOY_KNOWN_HOSTS`, XDG, HOME).
    public static func knownHostsPath(_ variables: [String: String]) -> String {
        KnownHostsFile.defaultPath(environment: variables)
    }
}
