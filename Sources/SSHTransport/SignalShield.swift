#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps asynchronous signals away from the thread running libssh.
///
/// libssh 0.10 turns a `poll()` interrupted by a signal (EINTR) into SSH_ERROR with no message, so a
/// SIGCHLD from any child process hadeploy starts (Foundation's `Process` installs a handler) could
/// randomly fail a channel open or a read. Blocked here, such signals go to another thread.
/// Synchronous signals and SIGPIPE stay unblocked (a pending blocked SIGPIPE would kill the process
/// when unblocked; sockets are written with MSG_NOSIGNAL instead).
enum SignalShield {
    static func run<T>(_ body: () throws -> T) rethrows -> T {
        var blocked = sigset_t()
        sigfillset(&blocked)
        for signal in [SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGKILL, SIGSTOP] {
            sigdelset(&blocked, signal)
        }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }
}
