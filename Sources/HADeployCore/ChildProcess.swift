import Foundation

/// A child process started with `posix_spawn`, and not Foundation's `Process`.
///
/// Why not `Process`:
/// - swift-corelibs-foundation (Swift 6.3.1 still) lists /proc/self/fd before each spawn and copies
///   each entry's `d_name` whole, past the end of a shorter record. A test process crashed there.
/// - It hands the exit over on a dispatch queue that a busy process once left unserved for a minute.
///
/// Here:
/// - the child's 0, 1 and 2 are pipes, /dev/null or descriptors the caller gives, and every other
///   descriptor is closed in it;
/// - its signals are at their defaults and unblocked;
/// - a thread of its own waits for its exit.
///
/// A signal is only sent while the child has not been reaped, so never to a reused process ID.
/// The types that start processes (`LiveProcessRunner`, the twins, the tests' helpers) use it.
public final class ChildProcess: @unchecked Sendable {
    /// What one of the child's descriptors 0–2 is.
    public enum Stream {
        /// A pipe; this side's end is the matching `standard…` handle.
        case pipe
        /// /dev/null.
        case nullDevice
        /// A descriptor of this process (a log file, a FIFO), which stays this process's to close.
        case descriptor(Int32)
    }

    /// posix_spawn's failure: the errno (ENOENT, EACCES, ETXTBSY…) and its text.
    public struct SpawnFailure: Error, CustomStringConvertible {
        public var code: Int32
        public var description: String { "posix_spawn: \(String(cString: strerror(code)))" }
    }

    public let processIdentifier: Int32
    /// This side's end of each `.pipe`: the write end of stdin, the read ends of stdout and stderr.
    public let standardInput: FileHandle?
    public let standardOutput: FileHandle?
    public let standardError: FileHandle?

    private let lock = NSLock()
    private var status: Int32?
    private var signalled = false
    private var waiters: [UInt64: CheckedContinuation<Int32?, Never>] = [:]
    private var tokens: UInt64 = 0

    /// Starts `executable` (a path) with `arguments`; `environment` nil is this process's own.
    public init(
        executable: String, arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, standardInput: Stream = .nullDevice, standardOutput: Stream = .pipe,
        standardError: Stream = .pipe
    ) throws(SpawnFailure) {
        // This side's end of each pipe (nil otherwise), and every pipe end made, to close on failure.
        var ours: [Int32?] = []
        var made: [Int32] = []
        var actions = SpawnCalls.emptyFileActions()
        var attributes = SpawnCalls.emptyAttributes()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        var result: Int32 = 0
        for (target, stream) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            guard result == 0 else { break }
            switch stream {
            case .pipe:
                guard let ends = SpawnCalls.pipe() else {
                    result = errno
                    break
                }
                made += [ends.read, ends.write]
                let (theirs, mine) = target == 0 ? (ends.read, ends.write) : (ends.write, ends.read)
                ours.append(mine)
                result = posix_spawn_file_actions_adddup2(&actions, theirs, target)
            case .nullDevice:
                ours.append(nil)
                result = posix_spawn_file_actions_addopen(
                    &actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let fd):
                ours.append(nil)
                result = posix_spawn_file_actions_adddup2(&actions, fd, target)
            }
        }
        if result == 0 { result = SpawnCalls.prepare(&actions, &attributes) }
        if result == 0, let directory {
            result = SpawnCalls.changeDirectory(&actions, to: directory)
        }

        let variables = environment ?? LiveEnvironment().variables
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        if result == 0 {
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        }
        // The child's ends are the child's alone now (or nobody's, when it did not start).
        let mine = Set(ours.compactMap { $0 })
        for fd in made where result != 0 || !mine.contains(fd) { close(fd) }
        guard result == 0 else { throw SpawnFailure(code: result) }
        processIdentifier = pid
        func handle(_ index: Int) -> FileHandle? {
            ours.count > index
                ? ours[index].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) } : nil
        }
        self.standardInput = handle(0)
        self.standardOutput = handle(1)
        self.standardError = handle(2)

        let waiter = Thread { [self] in waitForExit() }
        waiter.name = "hadeploy.child-wait"
        waiter.start()
    }

    /// Blocks until the child ends; then, under the lock, records its status and only then reaps it,
    /// so `signal` never reaches a process ID the system may have given to another process.
    private func waitForExit() {
        while !ChildStatus.waitUntilEnded(processIdentifier) {
            if errno != EINTR { break }
        }
        let resumed: (Int32, [CheckedContinuation<Int32?, Never>]) = lock.withLock {
            let ended = ChildStatus.reap(processIdentifier)
            status = ended.status
            signalled = ended.signalled
            defer { waiters = [:] }
            return (ended.status, Array(waiters.values))
        }
        for waiter in resumed.1 { waiter.resume(returning: resumed.0) }
    }

    /// The exit status (or the signal that ended it), nil while it runs.
    public var exitStatus: Int32? { lock.withLock { status } }

    /// The exit code when the child exited by itself; nil while it runs or when a signal ended it.
    public var exitCode: Int32? { lock.withLock { signalled ? nil : status } }

    public var isRunning: Bool { exitStatus == nil }

    /// Waits for the exit: its status (or the signal that ended it); nil when the task is cancelled
    /// first.
    public func exited() async -> Int32? {
        let token: UInt64 = lock.withLock {
            tokens += 1
            return tokens
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let now: Int32?? = lock.withLock {
                    if let status { return .some(status) }
                    if Task.isCancelled { return .some(nil) }
                    waiters[token] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            lock.withLock { waiters.removeValue(forKey: token) }?.resume(returning: nil)
        }
    }

    /// Whether the child ended within `limit`.
    public func ended(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Sends `signal` while the child is not reaped yet; nothing after.
    public func signal(_ signal: Int32) {
        lock.withLock {
            if status == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// SIGTERM, then SIGKILL when it is still there after `grace`.
    public func terminate(grace: Duration = .milliseconds(500)) async {
        signal(SIGTERM)
        if await ended(within: grace) { return }
        signal(SIGKILL)
        _ = await ended(within: .seconds(5))
    }
}
