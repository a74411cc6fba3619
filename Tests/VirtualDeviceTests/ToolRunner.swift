import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a real libimobiledevice tool as a subprocess with a deadline (killed when it passes).
struct ToolResult: CustomStringConvertible {
    let status: Int32
    let stdout: String
    let stderr: String
    let timedOut: Bool
    let seconds: Double

    var output: String { stdout + stderr }
    var description: String {
        "exit \(status)\(timedOut ? " (killed on timeout)" : "") after \(String(format: "%.1f", seconds)) s\n"
            + "stdout: \(stdout)\nstderr: \(stderr)"
    }
}

/// Spawns with posix_spawn and an EMPTY signal mask: Foundation's Process inherits the mask of the
/// calling thread, and Swift-concurrency (libdispatch) threads block SIGINT/SIGTERM, so a child
/// started from a test would never see the SIGINT that makes idevicedebug send `k`.
enum ToolRunner {
    /// Where Debian puts the tools; a missing tool fails the test (scripts/idevice-tools.sh installs them).
    static func path(of tool: String) -> String { "/usr/bin/\(tool)" }

    static func run(
        _ tool: String, _ arguments: [String], socket: String, directory: URL? = nil, timeout: Double = 20,
        interruptWhen: (@Sendable () async -> Bool)? = nil
    ) async throws -> ToolResult {
        try await run(
            path: path(of: tool), arguments, environment: ["USBMUXD_SOCKET_ADDRESS": socket],
            directory: directory,
            timeout: timeout, interruptWhen: interruptWhen)
    }

    /// Runs any executable with extra environment variables.
    static func run(
        path: String, _ arguments: [String], environment extra: [String: String], directory: URL? = nil,
        timeout: Double, interruptWhen: (@Sendable () async -> Bool)? = nil
    ) async throws -> ToolResult {
        let environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        let child = try spawn(path, arguments, environment: environment, directory: directory)
        let started = Date()
        async let outData = drain(child.stdout)
        async let errData = drain(child.stderr)
        let exit = ExitWatcher(pid: child.pid)
        var timedOut = false
        var interrupted = false
        while exit.status == nil {
            let elapsed = Date().timeIntervalSince(started)
            if elapsed > timeout {
                timedOut = true
                kill(child.pid, SIGKILL)
                break
            }
            if !interrupted, let interruptWhen, await interruptWhen() {
                interrupted = true
                kill(child.pid, SIGINT)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let status = await exit.wait()
        let stdout = String(decoding: await outData, as: UTF8.self)
        let stderr = String(decoding: await errData, as: UTF8.self)
        return ToolResult(
            status: status, stdout: stdout, stderr: stderr, timedOut: timedOut,
            seconds: Date().timeIntervalSince(started))
    }

    struct Child {
        let pid: pid_t
        let stdout: Int32
        let stderr: Int32
    }

    struct SpawnError: Error, CustomStringConvertible {
        let tool: String
        let code: Int32
        var description: String {
            "could not start \(tool): \(String(cString: strerror(code))) — run scripts/idevice-tools.sh"
        }
    }

    static func spawn(_ path: String, _ arguments: [String], environment: [String: String], directory: URL?)
        throws
        -> Child
    {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw SpawnError(tool: path, code: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        for fd in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        // glibc's addchdir_np is not visible from Swift: change directory through sh instead.
        let command =
            directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0.path, path] + arguments }
            ?? [path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, &attributes, argv, envp)
        close(outPipe[1])
        close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw SpawnError(tool: path, code: result)
        }
        return Child(pid: pid, stdout: outPipe[0], stderr: errPipe[0])
    }

    /// Reads a pipe to EOF on a GCD thread: a blocking read on the Swift cooperative pool (2 threads
    /// on this machine) would starve the emulator running in this very process.
    private static func drain(_ fd: Int32) async -> Data {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
                continuation.resume(returning: handle.readDataToEndOfFile())
            }
        }
    }
}

/// Waits for a child with waitpid on a GCD thread.
final class ExitWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    init(pid: pid_t) {
        DispatchQueue.global().async { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
            // WIFEXITED: low 7 bits zero → exit code in bits 8-15; else the signal number.
            let status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : raw & 0x7F
            lock.lock()
            result = status
            let pending = waiters
            waiters.removeAll()
            lock.unlock()
            pending.forEach { $0.resume(returning: status) }
        }
    }

    var status: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return result
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let result {
                lock.unlock()
                continuation.resume(returning: result)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}
