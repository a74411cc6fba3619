#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C `read` and `write`, which methods of the same name would otherwise hide.
enum SystemIO {
    #if canImport(Glibc)
        static let read = Glibc.read
        static let write = Glibc.write
    #else
        static let read = Darwin.read
        static let write = Darwin.write
    #endif
}

/// What the process sets up about itself at start, where the platforms differ.
public enum ProcessSetup {
    /// The descriptor limit every platform gets: Linux's usual soft limit. macOS starts Terminal and
    /// launchd processes with 256, which a fan-out to many devices (sockets, pipes, NIO channels per
    /// device) can reach. Not above 1024: libimobiledevice select()s on its sockets, and a
    /// descriptor at or above FD_SETSIZE (1024 on both) breaks that. Linux is left as it is.
    public static let openFileLimit: rlim_t = 1024

    /// Darwin: raises the soft `RLIMIT_NOFILE` to `openFileLimit` (never above the hard limit, never
    /// lowered); returns the soft limit now in force. Linux: the soft limit, unchanged.
    @discardableResult
    public static func raiseOpenFileLimit() -> rlim_t {
        var limit = rlimit()
        #if canImport(Darwin)
            guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return 0 }
            let wanted = min(openFileLimit, limit.rlim_max)
            if limit.rlim_cur < wanted {
                var raised = limit
                raised.rlim_cur = wanted
                if setrlimit(RLIMIT_NOFILE, &raised) == 0 { limit = raised }
            }
        #else
            guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        #endif
        return limit.rlim_cur
    }
}

/// The socket spellings every target needs that differ between Linux (Glibc) and macOS (Darwin), in
/// one place for all of them (the targets' own platform files keep only what is theirs alone).
public enum SocketCalls {
    /// `SOCK_STREAM` as `socket()` takes it: a Glibc enum on Linux, an `Int32` macro on Darwin.
    #if canImport(Glibc)
        public static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        public static let streamSocket = SOCK_STREAM
    #endif

    /// `SOCK_DGRAM`, likewise.
    #if canImport(Glibc)
        public static let datagramSocket = Int32(SOCK_DGRAM.rawValue)
    #else
        public static let datagramSocket = SOCK_DGRAM
    #endif

    /// The `send()` flags that keep a peer that closed from raising SIGPIPE: `MSG_NOSIGNAL` on
    /// Linux; none on Darwin, where `ignoreBrokenPipe` sets `SO_NOSIGPIPE` on the socket.
    #if canImport(Glibc)
        public static let noSignalSendFlags = Int32(MSG_NOSIGNAL)
    #else
        public static let noSignalSendFlags: Int32 = 0
    #endif

    /// Darwin: a write to a socket whose peer closed fails with EPIPE instead of killing the process
    /// (Linux passes `noSignalSendFlags` with each send instead).
    public static func ignoreBrokenPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }
}

/// What a child process became, looked at without reaping it.
enum ChildStatus {
    /// The child's exit status (or the signal that ended it, as Foundation's `terminationStatus`
    /// gives it) once it has ended; nil while it runs, or when it is no longer this process's child
    /// to ask about. `WNOWAIT` leaves it waitable: Foundation's own `waitpid` still reaps it.
    static func endedWithoutReaping(_ pid: Int32) -> Int32? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return nil }
        #if canImport(Glibc)
            let ended = info._sifields._sigchld.si_pid
            let status = info._sifields._sigchld.si_status
        #else
            let ended = info.si_pid
            let status = info.si_status
        #endif
        // WNOHANG with nothing ended yet: 0 and si_pid left 0.
        return ended == pid ? status : nil
    }
}
