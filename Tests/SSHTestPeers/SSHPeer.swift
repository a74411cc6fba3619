import Foundation
import SSHTransport
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A real SSH server on 127.0.0.1 started for one test: OpenSSH (modern, legacy-only, without SFTP)
/// or dropbear, with its own host keys, port and temp directory. `stop()` kills it and its sessions.
package final class SSHPeer: @unchecked Sendable {
    package enum Kind: String, CaseIterable, Sendable {
        case modern
        case legacy
        case noSFTP
        /// An SFTP subsystem that never answers: `sftp_init` blocks forever.
        case hangingSFTP
        /// OpenSSH whose sftp-server does not announce `limits@openssh.com`, as OpenSSH < 8.7 and
        /// dropbear's do: libssh ≥ 0.11 then writes at most 32 KiB per `sftp_write`.
        case noLimitsSFTP
        case dropbear
    }

    package let kind: Kind
    /// Set before the server starts; another port only when the first was taken meanwhile.
    package private(set) var port: Int
    package let directory: URL
    private var pid: pid_t?
    private var lifeline: Lifeline?
    private let logPath: String

    package var keyDirectory: URL { directory.appendingPathComponent("keys") }

    private init(kind: Kind, port: Int, directory: URL) {
        self.kind = kind
        self.port = port
        self.directory = directory
        self.logPath = directory.appendingPathComponent("server.log").path
    }

    /// Starts a peer; throws (so the test fails) if it does not come up.
    package static func start(_ kind: Kind) async throws -> SSHPeer {
        // As hadeploy's own entry does: a server that closes mid-write is an EPIPE for that call, not
        // the end of the whole test process (signal 13 ended every SSH suite once).
        signal(SIGPIPE, SIG_IGN)
        try TestEnvironment.requireSetup()
        let directory = try TestEnvironment.makeDirectory("hadeploy-sshpeer")
        let peer = SSHPeer(kind: kind, port: try FreePort.pick(), directory: directory)
        try await peer.makeHostKeys()
        // The port was free when picked, but another process (a twin, an outgoing connection: the
        // kernel hands out ports from the same range) may take it before the server binds it.
        var attempt = 1
        while true {
            do {
                try await peer.launch()
                return peer
            } catch let error as TestEnvironment.SetupMissing {
                guard attempt < 3, peer.log.contains("Address already in use") else { throw error }
                attempt += 1
                peer.port = try FreePort.pick()
            }
        }
    }

    private func makeHostKeys() async throws {
        try FileManager.default.createDirectory(at: keyDirectory, withIntermediateDirectories: true)
        let keys = keyDirectory.path
        switch kind {
        case .modern, .noSFTP, .hangingSFTP, .noLimitsSFTP:
            try await TestEnvironment.run(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keys + "/modern_ed25519_host"])
            try await TestEnvironment.run(
                "/usr/bin/ssh-keygen",
                ["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", keys + "/modern_rsa_host"])
        case .legacy:
            try await TestEnvironment.run(
                "/usr/bin/ssh-keygen",
                ["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", keys + "/legacy_rsa_host"])
        case .dropbear:
            try await TestEnvironment.run(
                "/usr/bin/dropbearkey", ["-t", "ed25519", "-f", keys + "/dropbear_ed25519_host"])
        }
    }

    /// known_hosts lines for this server's host keys, written from the key files (not by our code).
    package func knownHostsLines() async throws -> [String] {
        let pattern = "[127.0.0.1]:\(port)"
        switch kind {
        case .dropbear:
            let output = try await TestEnvironment.run(
                "/usr/bin/dropbearkey", ["-y", "-f", keyDirectory.path + "/dropbear_ed25519_host"]
            ).output
            return output.split(separator: "\n").filter { $0.hasPrefix("ssh-") }.map {
                let parts = $0.split(separator: " ")
                return "\(pattern) \(parts[0]) \(parts[1])"
            }
        default:
            let files = try FileManager.default.contentsOfDirectory(atPath: keyDirectory.path).filter {
                $0.hasSuffix(".pub")
            }
            return try files.sorted().map {
                let text = try String(contentsOfFile: keyDirectory.path + "/" + $0, encoding: .utf8)
                let parts = text.split(separator: " ")
                return "\(pattern) \(parts[0]) \(parts[1])"
            }
        }
    }

    /// SHA256 fingerprints of the host keys, as `ssh-keygen -lf` prints them.
    package func fingerprints() async throws -> [String] {
        var result: [String] = []
        for line in try await knownHostsLines() {
            let output = try await TestEnvironment.run(
                "/usr/bin/ssh-keygen", ["-lf", "-"], stdin: line + "\n"
            )
            .output
            result.append(String(output.split(separator: " ")[1]))
        }
        return result
    }

    package func writeKnownHosts(to path: String) async throws {
        let lines = try await knownHostsLines()
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: path, atomically: true, encoding: .utf8)
    }

    private func launch() async throws {
        let executable: String
        let arguments: [String]
        switch kind {
        case .dropbear:
            executable = "/usr/sbin/dropbear"
            arguments = [
                "-F", "-E", "-p", "127.0.0.1:\(port)", "-r", keyDirectory.path + "/dropbear_ed25519_host",
                "-P", directory.path + "/dropbear.pid",
            ]
        default:
            let file: String
            switch kind {
            case .legacy: file = "sshd_legacy.conf"
            case .noSFTP: file = "sshd_nosftp.conf"
            case .hangingSFTP: file = "sshd_hangsftp.conf"
            case .noLimitsSFTP: file = "sshd_nolimits.conf"
            default: file = "sshd_modern.conf"
            }
            let template = TestEnvironment.scriptsDirectory.appendingPathComponent(file)
            let config = try String(contentsOf: template, encoding: .utf8)
                .replacingOccurrences(of: "KEYDIR", with: keyDirectory.path)
                .replacingOccurrences(of: "RUNDIR", with: directory.path)
            if kind == .noLimitsSFTP {
                // The subsystem runs as the test user: a copy in the peer's directory, which it can
                // reach wherever the checkout is.
                try TestEnvironment.installExecutable(
                    from: TestEnvironment.scriptsDirectory.appendingPathComponent("sftp-server-nolimits"),
                    to: directory.appendingPathComponent("sftp-server-nolimits"))
            }
            let configPath = directory.appendingPathComponent("sshd.conf").path
            try config.write(toFile: configPath, atomically: true, encoding: .utf8)
            executable = "/usr/sbin/sshd"
            arguments = ["-D", "-e", "-f", configPath, "-p", String(port)]
        }
        // The lifeline: the server dies with this test process, even when it crashes.
        let lifeline = try Lifeline(at: directory.appendingPathComponent("lifeline").path)
        self.lifeline = lifeline
        let guarded = Lifeline.guarded(executable, arguments)
        let pid = try TestEnvironment.spawn(
            guarded.executable, guarded.arguments, stdinPath: lifeline.path, outputPath: logPath)
        self.pid = pid
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                self.pid = nil
                lifeline.cut()
                throw TestEnvironment.SetupMissing(description: "\(kind) server exited at start: \(self.log)")
            }
            if TestEnvironment.isListening(port: port) {
                // Someone listens there — make sure it is this server, not another one on the same port.
                try await Task.sleep(for: .milliseconds(100))
                if waitpid(pid, &status, WNOHANG) == pid {
                    self.pid = nil
                    lifeline.cut()
                    throw TestEnvironment.SetupMissing(
                        description: "\(kind) server exited at start (port \(port) taken?): \(self.log)")
                }
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop()
        throw TestEnvironment.SetupMissing(
            description: "\(kind) server did not listen on \(port): \(self.log)")
    }

    package var serverPID: Int32? { pid }

    package var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Kills the server and every session process it forked (SIGKILL: like pulling the plug).
    package func kill() {
        // The sessions first, while they are still the server's descendants: cutting the lifeline
        // first lets the watcher end the server, whose sessions then belong to init and live on.
        if let pid {
            let pids = [pid] + TestEnvironment.descendants(of: pid)
            for one in pids { TestPlatform.kill(one, SIGKILL) }
        }
        lifeline?.cut()
        lifeline = nil
        guard let pid else { return }
        _ = TestEnvironment.wait(pid, timeout: 10)
        self.pid = nil
    }

    /// Starts the same server again (same port and keys) after `kill`.
    package func restart() async throws {
        try await launch()
    }

    package func stop() {
        kill()
    }

    package func stopAndClean() {
        kill()
        TestEnvironment.remove(directory)
    }

    /// A connection config trusting this server, logging in as the test user.
    package func config(
        name: String? = nil, authentication: SSHAuthentication? = nil, legacy: Bool? = nil,
        knownHosts: String? = nil
    ) async throws -> SSHConnectionConfig {
        let path = knownHosts ?? directory.appendingPathComponent("known_hosts").path
        if knownHosts == nil { try await writeKnownHosts(to: path) }
        // The legacy server accepts only ssh-rsa user keys.
        let defaultKey = kind == .legacy ? TestEnvironment.rsaKey : TestEnvironment.ed25519Key
        let auth = authentication ?? .privateKey(path: defaultKey, passphrase: nil)
        return SSHConnectionConfig(
            name: name ?? "test-\(kind.rawValue)", host: "127.0.0.1", port: port, user: TestEnvironment.user,
            authentication: auth, knownHostsPath: path, fileSystem: TestHost.fileSystem,
            legacyAlgorithms: legacy ?? (kind == .legacy),
            timeouts: SSHTimeouts(connect: 15, authentication: 15, command: 30, sftpInit: 5, transfer: 60))
    }
}
