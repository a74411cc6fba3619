import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs every call into one libssh session on a private serial queue, each bounded by a deadline.
///
/// libssh sessions are not thread-safe, and many of its blocking calls wait without limit
/// (`sftp_init` against dropbear, channel reads, `ssh_channel_get_exit_status`): SSH_OPTIONS_TIMEOUT
/// only covers connect and a few waits. So a watchdog shuts the TCP socket down when a deadline passes
/// (or the task is cancelled); the blocked call then fails at once. The session is dead afterwards.
/// Blocking work never runs on Swift's cooperative pool.
final class SessionExecutor: @unchecked Sendable {
    /// Watchdog timers fire on their own serial queue: a global concurrent queue can be starved when
    /// its threads are busy (Swift's pool on Linux is one of them), and then no deadline would fire.
    static let watchdogQueue = DispatchQueue(label: "hadeploy.ssh.watchdog")

    private let queue: DispatchQueue
    private let lock = NSLock()
    // Guarded by `lock`.
    private var watchedSocket: Int32 = -1
    private var nextToken = 0
    private var expired: Set<Int> = []
    private var active: Set<Int> = []
    private var abortReason: String?

    let device: String

    init(device: String) {
        self.device = device
        self.queue = DispatchQueue(label: "hadeploy.ssh.\(device)")
    }

    deinit {
        if watchedSocket >= 0 { close(watchedSocket) }
    }

    /// Gives the executor its own duplicate of the session socket, so shutting it down can never hit
    /// a descriptor number that libssh closed and the process reused.
    func watch(socket: Int32) {
        let copy = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        lock.withLock {
            if watchedSocket >= 0 { close(watchedSocket) }
            watchedSocket = copy
        }
    }

    /// Shuts the connection down now: every blocked or later call fails.
    func abort(reason: String) {
        lock.withLock {
            if abortReason == nil { abortReason = reason }
            if watchedSocket >= 0 { shutdown(watchedSocket, Int32(SHUT_RDWR)) }
        }
    }

    var abortedReason: String? { lock.withLock { abortReason } }

    /// Arms the deadline of one step: when it passes before ``finished(_:)``, the socket is shut down
    /// (whatever libssh call blocks returns) and the step counts as timed out.
    private func startWatchdog(_ step: String, timeout: Double) -> (
        token: Int, timer: any DispatchSourceTimer
    ) {
        let token = lock.withLock { () -> Int in
            nextToken += 1
            active.insert(nextToken)
            return nextToken
        }
        let timer = DispatchSource.makeTimerSource(queue: Self.watchdogQueue)
        timer.schedule(deadline: .now() + max(timeout, 0.001))
        timer.setEventHandler { [self] in
            lock.withLock {
                guard active.contains(token) else { return }
                expired.insert(token)
                if watchedSocket >= 0 { shutdown(watchedSocket, Int32(SHUT_RDWR)) }
                if abortReason == nil { abortReason = "\(step) timed out" }
            }
        }
        timer.resume()
        return (token, timer)
    }

    /// The step of `token` ended: whether its deadline had passed.
    private func finished(_ token: Int) -> Bool {
        lock.withLock {
            active.remove(token)
            return expired.remove(token) != nil
        }
    }

    /// Runs `body` on the session queue; throws `SSHError.timedOut` if it took longer than `timeout`.
    func run<T: Sendable>(
        _ step: String, timeout: Double, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let (token, timer) = startWatchdog(step, timeout: timeout)
        defer { timer.cancel() }
        let device = self.device
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                queue.async { [self] in
                    let result = Result { try SignalShield.run(body) }
                    let timedOut = finished(token)
                    if timedOut {
                        continuation.resume(
                            throwing: SSHError.timedOut(device: device, step: step, seconds: timeout))
                    } else {
                        continuation.resume(with: result)
                    }
                }
            }
        } onCancel: {
            self.abort(reason: "cancelled")
        }
    }

    /// Inside a queued body: bounds one part of it (e.g. `sftp_init`) by its own, shorter deadline.
    func guarded<T>(_ step: String, timeout: Double, _ body: () throws -> T) throws -> T {
        let (token, timer) = startWatchdog(step, timeout: timeout)
        defer { timer.cancel() }
        let result = Result { try body() }
        let timedOut = finished(token)
        if timedOut { throw SSHError.timedOut(device: device, step: step, seconds: timeout) }
        return try result.get()
    }

    /// Runs `body` on the session queue without a deadline: only for freeing handles.
    func runDetached(_ body: @escaping @Sendable () -> Void) {
        queue.async { SignalShield.run(body) }
    }
}
