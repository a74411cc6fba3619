import Foundation
import HADeployCore
import HostCrypto

/// Locations and edits of known_hosts files.
public enum KnownHostsFile {
    /// hadeploy's own file, the one rule everywhere: `HADEPLOY_KNOWN_HOSTS`, else
    /// `$XDG_CONFIG_HOME/hadeploy/known_hosts`, else `$HOME/.config/hadeploy/known_hosts`.
    /// Without HOME, `~/.config/hadeploy/known_hosts`: the connection expands `~` against the
    /// account's home folder (as OpenSSH does; `SSHConnectionConfig.resolvedKnownHostsPath`).
    public static func defaultPath(environment: [String: String]) -> String {
        if let explicit = environment["HADEPLOY_KNOWN_HOSTS"], !explicit.isEmpty { return explicit }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return xdg + "/hadeploy/known_hosts"
        }
        let home =
            environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "~"
        return home + "/.config/hadeploy/known_hosts"
    }

    /// The host pattern OpenSSH and libssh write: `host` for port 22, else `[host]:port`.
    static func hostPattern(host: String, port: Int) -> String {
        port == 22 ? host : "[\(host)]:\(port)"
    }

    /// Removes every entry for `host:port` (plain or hashed `|1|salt|hash`) and returns how many went.
    /// `fileSystem` is the machine's (the file libssh reads and writes).
    @discardableResult
    static func removeEntries(host: String, port: Int, path: String, fileSystem: any FileSystem) throws -> Int
    {
        guard fileSystem.fileExists(atPath: path) else { return 0 }
        guard let data = fileSystem.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw SSHError.knownHostsFailed(path: path, reason: "it cannot be read as text")
        }
        let pattern = hostPattern(host: host, port: port)
        var kept: [Substring] = []
        var removed = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let hosts = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            if !line.hasPrefix("#"), matches(hosts: hosts, pattern: pattern) {
                removed += 1
            } else {
                kept.append(line)
            }
        }
        if removed > 0 {
            do {
                try fileSystem.writePrivately(
                    Data(kept.joined(separator: "\n").utf8), to: URL(fileURLWithPath: path))
            } catch {
                throw SSHError.knownHostsFailed(path: path, reason: error.localizedDescription)
            }
        }
        return removed
    }

    private static func matches(hosts: String, pattern: String) -> Bool {
        if hosts.hasPrefix("|1|") {
            // Hashed entry: HMAC-SHA1 of the host pattern keyed with the salt (OpenSSH hostfile.c).
            let parts = hosts.split(separator: "|")
            guard parts.count == 3, let salt = Data(base64Encoded: String(parts[1])),
                let hash = Data(base64Encoded: String(parts[2]))
            else { return false }
            return Data(HMACSHA1.authenticationCode(for: Data(pattern.utf8), key: salt)) == hash
        }
        return hosts.split(separator: ",").contains { $0 == pattern }
    }
}
