import DeployModel
import Foundation
import HADeployCore
import HADeployKit

#if canImport(Glibc)
    import Glibc
#endif

/// The jailbroken twin `--virtual` gives an SSH device (the iPad 2): `scripts/jailbreak-twin/twin.sh`,
/// a real sshd in an iOS-like tree with `open`, `uicache`, `ldid`, `killall` and the virtual app, on
/// 127.0.0.1. It needs the twin's scripts (the copy an installed hadeploy carries in its `share/`, or a
/// checkout's) and, when hadeploy does not run as root, user namespaces (twin.sh runs in one then);
/// without them the device is "not available".
///
/// Safe on a shared machine: root logs in with a key made for this run only (no password), kept in a
/// 0700 folder; the server runs pivoted into the twin's root with reduced capabilities (twin.sh); and
/// the twin's stdin is a FIFO only this process holds open for writing, so the twin ends with it
/// however it ends (`--lifeline`), SIGKILL included.
///
/// Like the iPad it stands for, the twin keeps what is on it between runs: its root (`root/`: the
/// installed apps, their preferences and Documents) and its host keys stay in the folder; the key,
/// known_hosts, log and lifeline are made anew for each run.
/// Why no twin script may run.
enum TwinScriptProblem: Error, Equatable {
    /// None of the places a twin script may be has one.
    case missing
    /// The script found could have been written by another user.
    case untrusted(script: String, problem: String)
}

final class JailbreakTwinProcess: @unchecked Sendable {
    /// Where it listens and how root logs in: what the twins' topology hands the SSH driver.
    let endpoint: JailbrokenTwinEndpoint
    private let process: ChildProcess
    /// The write end of the twin's stdin: closing it (or this process ending) ends the twin.
    private let lifeline: FileHandle
    private let stopped = NSLock()
    private var isStopped = false

    private init(endpoint: JailbrokenTwinEndpoint, process: ChildProcess, lifeline: FileHandle) {
        self.endpoint = endpoint
        self.process = process
        self.lifeline = lifeline
    }

    /// Where the twin's folder may be, in order: `HADEPLOY_JAILBREAK_TWIN` (its `twin.sh`), the copy an
    /// installed hadeploy carries (`<prefix>/share/hadeploy/jailbreak-twin`, next to `<prefix>/bin`),
    /// and the project directory's own `scripts/jailbreak-twin` (a checkout of this repository).
    static func scriptCandidates(
        environment: [String: String], executablePath: String?, projectDirectory: URL
    )
        -> [String]
    {
        var candidates: [String] = []
        if let explicit = environment["HADEPLOY_JAILBREAK_TWIN"], !explicit.isEmpty {
            candidates.append(explicit)
        }
        if let executablePath {
            candidates.append(
                URL(fileURLWithPath: executablePath).deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("share/hadeploy/jailbreak-twin/twin.sh").path)
        }
        candidates.append(projectDirectory.appendingPathComponent("scripts/jailbreak-twin/twin.sh").path)
        return candidates
    }

    /// The first twin script that exists, if only this user or root could have written it (the script,
    /// the files it copies and every folder above them: ``TrustedFiles``); otherwise why not.
    static func script(
        environment: [String: String], executablePath: String?, projectDirectory: URL, userID: UInt32,
        fileSystem: any FileSystem
    ) -> Result<String, TwinScriptProblem> {
        let candidates = scriptCandidates(
            environment: environment, executablePath: executablePath, projectDirectory: projectDirectory)
        guard let script = candidates.first(where: { fileSystem.fileExists(atPath: $0) }) else {
            return .failure(.missing)
        }
        // twin.sh and the files it copies from its own folder into the twin.
        let folder = URL(fileURLWithPath: script).deletingLastPathComponent()
        // (A sibling that is missing cannot be planted later: the folder itself is checked.)
        let files =
            [script]
            + ["springboard.py", "app.py"].map { folder.appendingPathComponent($0).path }.filter {
                fileSystem.fileExists(atPath: $0)
            }
        if let problem = TrustedFiles.problem(paths: files, userID: userID, fileSystem: fileSystem) {
            return .failure(.untrusted(script: script, problem: problem))
        }
        return .success(script)
    }

    /// What `start` makes anew in the twin's folder for each run; everything else (`root/`) is kept.
    static let perRunFiles = ["id_ed25519", "id_ed25519.pub", "known_hosts", "twin.log", "lifeline"]

    /// Starts a twin in `directory` (its root, kept from the last run; a fresh client key, known_hosts)
    /// and waits until it listens.
    static func start(script: String, directory: URL, runner: any ProcessRunner, fileSystem: any FileSystem)
        async throws -> JailbreakTwinProcess
    {
        let manager = fileSystem
        for name in perRunFiles { try? manager.removeItem(at: directory.appendingPathComponent(name)) }
        // Private to this user: the per-run key, and the twin's host keys and files under root/.
        for folder in [directory.deletingLastPathComponent(), directory] {
            try manager.createDirectory(at: folder, withIntermediateDirectories: true)
            guard chmod(folder.path, 0o700) == 0 else {
                throw TransportUnavailable(
                    device: "jailbreak twin", transport: "ssh",
                    reason:
                        "cannot make \(folder.path) private (chmod 700): \(String(cString: strerror(errno)))")
            }
        }
        let key = directory.appendingPathComponent("id_ed25519").path
        _ = try await runner.checked(
            ProcessCommand("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]), timeout: .seconds(30))
        let port = try freePort()
        let arguments = [
            directory.appendingPathComponent("root").path, String(port), "openssh",
            "--authorized-key", key + ".pub", "--lifeline",
        ]
        let log = directory.appendingPathComponent("twin.log")
        _ = manager.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        // The lifeline: a FIFO in the private folder that this process holds open for writing, opened
        // close-on-exec in one step, so no other child of this process ever holds it; the twin reads it
        // as its stdin and sees its end of file when this process closes it or ends, however.
        let fifo = directory.appendingPathComponent("lifeline").path
        let writer = mkfifo(fifo, 0o600) == 0 ? open(fifo, O_RDWR | O_CLOEXEC) : -1
        guard writer >= 0, let readEnd = FileHandle(forReadingAtPath: fifo) else {
            if writer >= 0 { close(writer) }
            throw TransportUnavailable(
                device: "jailbreak twin", transport: "ssh",
                reason: "cannot make the twin's lifeline \(fifo): \(String(cString: strerror(errno)))")
        }
        let lifeline = FileHandle(fileDescriptor: writer, closeOnDealloc: true)
        let process: ChildProcess
        do {
            process = try ChildProcess(
                executable: "/bin/sh", arguments: [script] + arguments,
                standardInput: .descriptor(readEnd.fileDescriptor),
                standardOutput: .descriptor(handle.fileDescriptor),
                standardError: .descriptor(handle.fileDescriptor))
        } catch {
            try? readEnd.close()
            try? lifeline.close()
            throw TransportUnavailable(
                device: "jailbreak twin", transport: "ssh", reason: "cannot start \(script): \(error)")
        }
        // The twin holds the FIFO's read end now; this process keeps only the write end (the lifeline).
        try? readEnd.close()
        let twin = JailbreakTwinProcess(
            endpoint: JailbrokenTwinEndpoint(
                port: port, key: key, knownHosts: directory.appendingPathComponent("known_hosts").path),
            process: process, lifeline: lifeline)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !isListening(port) {
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard isListening(port) else {
            twin.stop()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw TransportUnavailable(
                device: "jailbreak twin", transport: "ssh",
                reason: "the twin did not start: \(text.suffix(500))")
        }
        let hostKey = try String(
            contentsOf: directory.appendingPathComponent("root/etc/ssh/ssh_host_ed25519_key.pub"),
            encoding: .utf8)
        let fields = hostKey.split(separator: " ")
        try "[127.0.0.1]:\(port) \(fields[0]) \(fields[1])\n".write(
            toFile: twin.endpoint.knownHosts, atomically: true, encoding: .utf8)
        return twin
    }

    /// Ends the twin: the lifeline closed and SIGKILL of the namespace holder; the server, its sessions
    /// and the apps it started go with it. Returns once the port is closed (at most 5 s).
    func stop() {
        let first = stopped.withLock {
            defer { isStopped = true }
            return !isStopped
        }
        guard first else { return }
        try? lifeline.close()
        process.signal(SIGKILL)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, Self.isListening(endpoint.port) { usleep(20_000) }
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, SocketCalls.streamSocket, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            throw TransportUnavailable(device: "jailbreak twin", transport: "ssh", reason: "no free port")
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, SocketCalls.streamSocket, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
