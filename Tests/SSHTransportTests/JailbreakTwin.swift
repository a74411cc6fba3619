import Foundation
import HADeployDrivers
import SSHTestPeers
import SSHTransport
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A jailbroken iPad twin (scripts/jailbreak-twin/twin.sh): a real sshd or dropbear on 127.0.0.1 whose
/// sessions run pivoted into `root`, an iOS-like tree with `open`, `uicache`, `ldid`, `killall` and the
/// virtual app. The test reads and changes `root` directly from the host. Started as hadeploy starts
/// its twins: key-only (a password only when a test asks for one), in a 0700 folder, and with a
/// lifeline — the twin ends when this test process does, however it ends.
final class JailbreakTwin: @unchecked Sendable {
    enum Server: String, Sendable {
        case openssh
        case dropbear
    }

    let server: Server
    let legacy: Bool
    let root: URL
    let port: Int
    private var pid: pid_t?
    private let logPath: String
    /// The twin's stdin (twin.sh --lifeline).
    private var lifeline: Lifeline?

    private init(server: Server, legacy: Bool, unprivileged: Bool, root: URL, port: Int, logPath: String) {
        self.server = server
        self.legacy = legacy
        self.unprivileged = unprivileged
        self.root = root
        self.port = port
        self.logPath = logPath
    }

    /// Runs twin.sh as `nobody` (the twin in a user namespace), not as this test's user.
    let unprivileged: Bool

    /// Whether twin.sh runs as root: then root is 0 in the twin; otherwise the twin lives in a user
    /// namespace where root and mobile are one id, 501 (twin.sh).
    var runsAsRoot: Bool { !unprivileged && getuid() == 0 }

    /// The id a root session of the twin has.
    var sessionRootID: Int { runsAsRoot ? 0 : 501 }

    /// Who owns, seen from the host, a file the twin gave to mobile: 501, or the user twin.sh ran as.
    var mobileHostID: UInt32 { runsAsRoot ? 501 : unprivileged ? 65534 : getuid() }

    static var script: String {
        TestEnvironment.repoRoot.appendingPathComponent("scripts/jailbreak-twin/twin.sh").path
    }

    /// Starts a twin; throws (the test fails) if it does not come up. `password`: root may also log in
    /// with it (handed over in a 0600 file, never on a command line). `unprivileged`: twin.sh runs as
    /// `nobody` (when this test runs as root), in a user namespace.
    static func start(
        _ server: Server = .openssh, legacy: Bool = false, password: String? = nil, unprivileged: Bool = false
    ) async throws -> JailbreakTwin {
        try TestEnvironment.requireSetup()
        // A free port can be taken by another suite's server between its pick and the bind (as
        // SSHPeer also finds): another port, up to three times.
        var attempt = 1
        while true {
            let directory = try TestEnvironment.makeDirectory("hadeploy-twin")
            chmod(directory.path, 0o700)
            let twin = JailbreakTwin(
                server: server, legacy: legacy, unprivileged: unprivileged && getuid() == 0,
                root: directory.appendingPathComponent("root"),
                port: try FreePort.pick(), logPath: directory.appendingPathComponent("server.log").path)
            do {
                try await twin.launch(password: password)
                return twin
            } catch {
                guard attempt < 3, twin.log.contains("Address already in use") else { throw error }
                twin.stopAndClean()
                attempt += 1
            }
        }
    }

    /// Stops the twin and starts it again on the same root, as its next run does (what its sessions
    /// left in the root stays).
    func restart() async throws {
        stop()
        // The namespace's server dies just after its holder: until the port is free, "listening"
        // would be the old server's.
        let deadline = Date().addingTimeInterval(10)
        while TestEnvironment.isListening(port: port), Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await launch(password: nil)
    }

    private func launch(password: String?) async throws {
        var arguments = [
            Self.script, root.path, String(port), server.rawValue, "--authorized-key",
            (legacy ? TestEnvironment.rsaKey : TestEnvironment.ed25519Key) + ".pub", "--lifeline",
        ]
        if legacy { arguments.append("--legacy") }
        if let password {
            let file = root.deletingLastPathComponent().appendingPathComponent("password").path
            let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw TestEnvironment.SetupMissing(description: "cannot write \(file)") }
            _ = Array((password + "\n").utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            arguments += ["--password-file", file]
        }
        let lifeline = try Lifeline(
            at: root.deletingLastPathComponent().appendingPathComponent("lifeline").path)
        self.lifeline = lifeline
        var executable = "/bin/sh"
        if unprivileged {
            // nobody reads no test key: the twin's own folder gets the public one, and nobody gets the folder.
            let folder = root.deletingLastPathComponent()
            let key = folder.appendingPathComponent("authorized_key.pub")
            try? FileManager.default.removeItem(at: key)
            try FileManager.default.copyItem(
                atPath: (legacy ? TestEnvironment.rsaKey : TestEnvironment.ed25519Key) + ".pub",
                toPath: key.path)
            arguments[5] = key.path
            _ = try await TestEnvironment.run("/bin/chown", ["-R", "65534:65534", folder.path])
            executable = "/usr/bin/setpriv"
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh"] + arguments
        }
        let pid = try TestEnvironment.spawn(
            executable, arguments, stdinPath: lifeline.path, outputPath: logPath)
        self.pid = pid
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                self.pid = nil
                stop()
                throw TestEnvironment.SetupMissing(description: "the jailbreak twin exited at start: \(log)")
            }
            if TestEnvironment.isListening(port: port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        throw TestEnvironment.SetupMissing(
            description: "the jailbreak twin did not listen on \(port): \(log)")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The processes of the twin (server, sessions, apps): everything in its PID namespace.
    var processes: [pid_t] {
        guard let pid else { return [] }
        return [pid] + TestEnvironment.descendants(of: pid)
    }

    /// Command lines of the virtual apps running in the twin (started by its `open`).
    var appProcesses: [String] {
        processes.compactMap { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                data.range(of: Data("/usr/libexec/twin/app.py".utf8)) != nil
            else { return nil }
            return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        }
    }

    /// Kills the session processes only (the connection drops, the server keeps running).
    func dropSessions() {
        guard let pid else { return }
        // unshare → the namespace's init → the server (and the lifeline's watcher) → sessions.
        let descendants = TestEnvironment.descendants(of: pid)
        guard
            let server = descendants.first(where: {
                let name = (try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8)) ?? ""
                return ["sshd\n", "dropbear\n"].contains(name)
            })
        else { return }
        for session in TestEnvironment.descendants(of: server) { kill(session, SIGKILL) }
    }

    /// The lifeline closed and SIGKILL of the namespace holder: the server, sessions and apps die with it.
    func stop() {
        lifeline?.cut()
        lifeline = nil
        guard let pid else { return }
        kill(pid, SIGKILL)
        _ = TestEnvironment.wait(pid, timeout: 10)
        self.pid = nil
    }

    func stopAndClean() {
        stop()
        TestEnvironment.remove(root.deletingLastPathComponent())
    }

    /// known_hosts lines from the twin's host keys.
    func knownHostsLines() async throws -> [String] {
        let pattern = "[127.0.0.1]:\(port)"
        if server == .dropbear {
            let output = try await TestEnvironment.run(
                "/usr/bin/dropbearkey", ["-y", "-f", root.path + "/etc/dropbear/dropbear_rsa_host_key"]
            ).output
            return output.split(separator: "\n").filter { $0.hasPrefix("ssh-") }.map {
                let parts = $0.split(separator: " ")
                return "\(pattern) \(parts[0]) \(parts[1])"
            }
        }
        let names = legacy ? ["ssh_host_rsa_key.pub"] : ["ssh_host_rsa_key.pub", "ssh_host_ed25519_key.pub"]
        return try names.map {
            let parts = try String(contentsOfFile: root.path + "/etc/ssh/" + $0, encoding: .utf8).split(
                separator: " ")
            return "\(pattern) \(parts[0]) \(parts[1])"
        }
    }

    /// Logs in as root as on a jailbroken iPad (key by default, or `authentication`).
    func connection(name: String = "ipad2", authentication: SSHAuthentication? = nil) async throws
        -> SSHConnectionConfig
    {
        let path = root.deletingLastPathComponent().appendingPathComponent("known_hosts").path
        try (try await knownHostsLines().joined(separator: "\n") + "\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        return SSHConnectionConfig(
            name: name, host: "127.0.0.1", port: port, user: "root",
            authentication: authentication
                ?? .privateKey(
                    path: legacy ? TestEnvironment.rsaKey : TestEnvironment.ed25519Key, passphrase: nil),
            knownHostsPath: path, fileSystem: TestHost.fileSystem, legacyAlgorithms: legacy,
            timeouts: SSHTimeouts(connect: 15, authentication: 15, command: 60, sftpInit: 5, transfer: 120))
    }

    /// The deploy settings of a real device: every path as on iOS.
    func deployConfig(name: String = "ipad2", transfer: TransferMethod = .auto) async throws
        -> JailbreakDeployConfig
    {
        var config = JailbreakDeployConfig(connection: try await connection(name: name), transfer: transfer)
        config.screenshotTimeout = 30
        return config
    }

    func url(_ path: String) -> URL { root.appendingPathComponent(String(path.drop { $0 == "/" })) }

    func data(_ path: String) -> Data? { try? Data(contentsOf: url(path)) }

    func text(_ path: String) -> String { data(path).map { String(decoding: $0, as: UTF8.self) } ?? "" }
}
