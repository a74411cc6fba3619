import Foundation
import HADeployCore
import SSHTransport
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Fixed facts prepared by scripts/ssh-peers.sh, and small process helpers.
package enum TestEnvironment {
    package static let user = "hadeploy-ssh"
    package static let stateDirectory = "/var/lib/hadeploy-ssh-test"
    package static var ed25519Key: String { stateDirectory + "/id_ed25519" }
    package static var rsaKey: String { stateDirectory + "/id_rsa" }
    package static var repoRoot: URL { repositoryRoot }
    package static var scriptsDirectory: URL { repoRoot.appendingPathComponent("scripts/ssh") }

    package struct SetupMissing: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// Fails (never skips) when the setup script has not been run.
    package static func requireSetup() throws {
        // As hadeploy's own entry does: a server that closes mid-write is an EPIPE for that call, not
        // the end of the whole test process (signal 13 ended every SSH suite once).
        signal(SIGPIPE, SIG_IGN)
        for path in [ed25519Key, rsaKey, "/usr/sbin/sshd", "/usr/sbin/dropbear"] {
            guard FileManager.default.fileExists(atPath: path) else {
                throw SetupMissing(
                    description: "\(path) is missing: run scripts/ssh-peers.sh (as root) first")
            }
        }
        guard getpwnam(user) != nil else {
            throw SetupMissing(
                description: "user \(user) is missing: run scripts/ssh-peers.sh (as root) first")
        }
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }

    package struct RunResult {
        package let status: Int32
        package let output: String
    }

    /// Starts a process with posix_spawn (stdin from a file or /dev/null, stdout+stderr to `outputPath`).
    ///
    /// Not Foundation's `Process`: its exit monitoring runs on a global dispatch queue, which starves while
    /// the parallel tests keep the (2-core) pool busy, so `isRunning` stayed true for finished processes.
    package static func spawn(
        _ executable: String, _ arguments: [String], stdinPath: String = "/dev/null", outputPath: String,
        environment: [String: String]? = nil
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var variables = ProcessInfo.processInfo.environment
        for (key, value) in environment ?? [:] { variables[key] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        // The test process blocks or ignores signals (SIGCHLD, SIGPIPE) for its own threads; a server
        // inheriting that never notices its children exit (dropbear then sends no exit-status).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGCHLD, SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGALRM, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else {
            throw SetupMissing(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    /// Exit status once `pid` ended, nil if it still runs after `timeout`.
    package static func wait(_ pid: pid_t, timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f) }
            if rc < 0 { return -1 }
            if Date() > deadline { return nil }
            usleep(5_000)
        }
    }

    /// Like `wait`, but sleeping with `Task.sleep`: the tests run in parallel on Swift's small pool
    /// (2 threads on CI), and a blocked thread there delays every other test's deadlines.
    package static func waitAsync(_ pid: pid_t, timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f) }
            if rc < 0 { return -1 }
            if Date() > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Sends `signal` to `pid` the moment `condition` holds (checked every 20 ms for up to `timeout`
    /// seconds); whether it was sent. The watching runs on a thread of its own: a test that waits on
    /// Swift's pool beside dozens of others (two threads on two cores) can miss a moment of a few
    /// seconds, such as an upload in progress.
    package static func sendSignal(
        _ number: Int32, to pid: pid_t, when condition: @escaping @Sendable () -> Bool, timeout: Double
    ) async -> Bool {
        await withCheckedContinuation { continuation in
            let watcher = Thread {
                let deadline = Date().addingTimeInterval(timeout)
                while Date() < deadline {
                    if condition() {
                        kill(pid, number)
                        continuation.resume(returning: true)
                        return
                    }
                    usleep(20_000)
                }
                continuation.resume(returning: false)
            }
            watcher.start()
        }
    }

    /// Runs a short local command, bounded by `timeout`.
    @discardableResult
    package static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil,
        environment: [String: String]? = nil,
        timeout: Double = 30
    ) async throws -> RunResult {
        let scratch = try makeDirectory("hadeploy-run")
        defer { remove(scratch) }
        let inputPath = scratch.appendingPathComponent("stdin").path
        let outputPath = scratch.appendingPathComponent("output").path
        try Data((stdin ?? "").utf8).write(to: URL(fileURLWithPath: inputPath))
        let pid = try spawn(
            executable, arguments, stdinPath: inputPath, outputPath: outputPath, environment: environment)
        guard let status = await waitAsync(pid, timeout: timeout) else {
            kill(pid, SIGKILL)
            _ = wait(pid, timeout: 5)
            throw SetupMissing(description: "\(executable) \(arguments) did not finish within \(timeout) s")
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return RunResult(status: status, output: output)
    }

    /// `run` for places that cannot await (a `defer`): blocks the calling thread.
    @discardableResult
    package static func runBlocking(
        _ executable: String, _ arguments: [String], stdin: String? = nil,
        environment: [String: String]? = nil,
        timeout: Double = 30
    ) throws -> RunResult {
        let scratch = try makeDirectory("hadeploy-run")
        defer { remove(scratch) }
        let inputPath = scratch.appendingPathComponent("stdin").path
        let outputPath = scratch.appendingPathComponent("output").path
        try Data((stdin ?? "").utf8).write(to: URL(fileURLWithPath: inputPath))
        let pid = try spawn(
            executable, arguments, stdinPath: inputPath, outputPath: outputPath, environment: environment)
        guard let status = wait(pid, timeout: timeout) else {
            kill(pid, SIGKILL)
            _ = wait(pid, timeout: 5)
            throw SetupMissing(description: "\(executable) \(arguments) did not finish within \(timeout) s")
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return RunResult(status: status, output: output)
    }

    /// `chown -R user:user` without starting a process.
    package static func giveToTestUser(_ url: URL) throws {
        guard let entry = getpwnam(user) else { throw SetupMissing(description: "no user \(user)") }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        var paths = [url.path]
        paths += (try FileManager.default.subpathsOfDirectory(atPath: url.path)).map { url.path + "/" + $0 }
        for path in paths { lchown(path, uid, gid) }
    }

    /// A fresh directory under /tmp that the test user can use, removed by `remove`.
    package static func makeDirectory(_ prefix: String, ownedByTestUser: Bool = false) throws -> URL {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SetupMissing(description: "mkdtemp failed") }
        let path = String(cString: made)
        chmod(path, 0o755)
        if ownedByTestUser { try giveToTestUser(URL(fileURLWithPath: path)) }
        return URL(fileURLWithPath: path)
    }

    package static func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:port.
    package static func isListening(port: Int) -> Bool {
        let fd = socket(AF_INET, TestPlatform.streamSocket, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0
    }

    /// All descendants of `pid`, deepest last.
    package static func descendants(of pid: Int32) -> [Int32] {
        var parents: [Int32: [Int32]] = [:]
        for (child, parent) in TestPlatform.parentsByProcess() { parents[parent, default: []].append(child) }
        var result: [Int32] = []
        var queue = [pid]
        while let next = queue.popLast() {
            for child in parents[next] ?? [] {
                result.append(child)
                queue.append(child)
            }
        }
        return result
    }

    package static func credentialsKey(_ path: String) -> SSHAuthentication {
        .privateKey(path: path, passphrase: nil)
    }

    /// Copies an executable with a close-on-exec descriptor: a write descriptor that a concurrently
    /// spawned child (another test's sshd) inherits keeps the file "Text file busy" for its lifetime.
    package static func installExecutable(from source: URL, to target: URL) throws {
        let data = try Data(contentsOf: source)
        let fd = open(target.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
        }
        defer { close(fd) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == data.count else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
        }
        fchmod(fd, 0o755)
    }
}

extension TestEnvironment {
    /// A TCP server on 127.0.0.1 that accepts each connection and closes it at once, before any
    /// banner: what a client sees from an sshd over its MaxStartups.
    package final class ClosingListener: @unchecked Sendable {
        package let port: Int
        private let fd: Int32

        init(fd: Int32, port: Int) {
            self.fd = fd
            self.port = port
            let listening = fd
            Thread {
                while true {
                    let client = accept(listening, nil, nil)
                    if client < 0 { return }
                    close(client)
                }
            }.start()
        }

        /// Stops accepting (the accept loop ends with the socket).
        package func stop() {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    package static func closingListener() throws -> ClosingListener {
        let (fd, port) = try FreePort.loopbackSocket(listening: true)
        return ClosingListener(fd: fd, port: port)
    }
}
