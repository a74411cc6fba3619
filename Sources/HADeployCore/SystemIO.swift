#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C `read`, `write` and `bind`, which methods of the same name would otherwise hide.
enum SystemIO {
    #if canImport(Glibc)
        static let read = Glibc.read
        static let write = Glibc.write
        static let bind = Glibc.bind
        static let connect = Glibc.connect
    #else
        static let read = Darwin.read
        static let write = Darwin.write
        static let bind = Darwin.bind
        static let connect = Darwin.connect
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

    /// Connects `fd` to `address` within `timeout` seconds: 0, or the errno (`ETIMEDOUT` when the
    /// time ran out). Non-blocking, then `poll`: a blocking `connect` bounded by `SO_SNDTIMEO` is
    /// bounded on Linux only — Darwin ignores it and waits out the kernel's ~75 s for an address that
    /// drops SYNs (a sleeping iPad's old address). `fd` is blocking again afterwards.
    public static func connect(
        _ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, timeout: Double
    ) -> Int32 {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        #if canImport(Glibc)
            let started = Glibc.connect(fd, address, length)
        #else
            let started = Darwin.connect(fd, address, length)
        #endif
        if started == 0 { return 0 }
        guard errno == EINPROGRESS else { return errno }
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, timeout) * 1000))
        while true {
            let left = deadline - ContinuousClock.now
            let milliseconds = Int32(
                clamping: max(
                    0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready == 1 else { return ready == 0 ? ETIMEDOUT : errno }
            var soError: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &size)
            return soError
        }
    }

    /// Darwin: a write to a socket whose peer closed fails with EPIPE instead of killing the process
    /// (Linux passes `noSignalSendFlags` with each send instead).
    public static func ignoreBrokenPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }
}

/// Waiting for a child process of `ChildProcess`, and reaping it.
enum ChildStatus {
    /// Blocks until the child has ended, leaving it unreaped (`WNOWAIT`); false when waiting failed
    /// (errno says why: EINTR, or ECHILD when it is not this process's child).
    static func waitUntilEnded(_ pid: Int32) -> Bool {
        while true {
            var info = siginfo_t()
            guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0 else { return false }
            // Darwin also answers for a child that was only stopped (SIGTSTP, SIGTTIN: a backgrounded
            // run), and answers again at once while it stays stopped: only an end counts, and a stopped
            // child is asked again a moment later, so its reaper never blocks under the lock.
            let code = Int32(info.si_code)
            if code == Int32(CLD_EXITED) || code == Int32(CLD_KILLED) || code == Int32(CLD_DUMPED) {
                return true
            }
            usleep(50_000)
        }
    }

    /// Reaps an ended child: its exit code, or the signal that ended it (`signalled`); -1 when it was
    /// not there to reap (somebody else's `waitpid` took it).
    static func reap(_ pid: Int32) -> (status: Int32, signalled: Bool) {
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, 0) == pid {
                let signal = status & 0x7f
                return signal == 0 ? ((status >> 8) & 0xff, false) : (signal, true)
            }
            if errno != EINTR { return (-1, false) }
        }
    }
}

/// `posix_spawn` as `ChildProcess` uses it, where the platforms differ: the types' spellings (a
/// struct on Linux, an opaque pointer on Darwin), and how the child gets no descriptor but 0–2 and
/// its working directory.
enum SpawnCalls {
    #if canImport(Glibc)
        typealias FileActions = posix_spawn_file_actions_t
        typealias Attributes = posix_spawnattr_t
        static func emptyFileActions() -> FileActions { FileActions() }
        static func emptyAttributes() -> Attributes { Attributes() }
    #else
        typealias FileActions = posix_spawn_file_actions_t?
        typealias Attributes = posix_spawnattr_t?
        static func emptyFileActions() -> FileActions { nil }
        static func emptyAttributes() -> Attributes { nil }
    #endif

    #if canImport(Glibc)
        private typealias AddCloseFrom =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        private typealias AddChdir =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        /// glibc's `_np` file actions (2.34 and 2.29) are not in the Glibc module Swift imports: they
        /// are looked up by name once.
        private static let addCloseFrom: AddCloseFrom? = dlsym(
            dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np"
        )
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }
        private typealias PipeWithFlags = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        /// `pipe2` (glibc 2.9), likewise not in the module.
        private static let pipeWithFlags: PipeWithFlags? = dlsym(dlopen(nil, RTLD_NOW), "pipe2")
            .map { unsafeBitCast($0, to: PipeWithFlags.self) }
        private static let addChdir: AddChdir? = dlsym(
            dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addchdir_np"
        )
        .map { unsafeBitCast($0, to: AddChdir.self) }
    #endif

    /// Every descriptor from 3 up is closed in the child: on Linux with a close-from file action
    /// (glibc 2.34+; before it, each descriptor open now, read from /proc/self/fd); on Darwin with
    /// `POSIX_SPAWN_CLOEXEC_DEFAULT`, which keeps only what the file actions set up. Signals the
    /// child gets at their defaults and unblocked (hadeploy ignores SIGPIPE, which exec would keep).
    static func prepare(_ actions: inout FileActions, _ attributes: inout Attributes) -> Int32 {
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        #if canImport(Glibc)
            if let addCloseFrom {
                let result = addCloseFrom(&actions, 3)
                if result != 0 { return result }
            } else {
                for fd in openDescriptors() where fd > 2 {
                    let result = posix_spawn_file_actions_addclose(&actions, fd)
                    if result != 0 { return result }
                }
            }
        #else
            flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        var result = posix_spawnattr_setsigdefault(&attributes, &all)
        if result == 0 { result = posix_spawnattr_setsigmask(&attributes, &none) }
        if result == 0 { result = posix_spawnattr_setflags(&attributes, Int16(flags)) }
        return result
    }

    /// The child starts in `directory`: ENOSYS where the C library cannot (glibc before 2.29).
    static func changeDirectory(_ actions: inout FileActions, to directory: String) -> Int32 {
        #if canImport(Glibc)
            guard let addChdir else { return ENOSYS }
            return addChdir(&actions, directory)
        #else
            return posix_spawn_file_actions_addchdir_np(&actions, directory)
        #endif
    }

    #if canImport(Glibc)
        /// The descriptors open now, read in place from /proc/self/fd (never copying `d_name`, whose
        /// record can be shorter than its declared 256 bytes).
        private static func openDescriptors() -> [Int32] {
            guard let directory = opendir("/proc/self/fd") else { return [] }
            defer { closedir(directory) }
            var found: [Int32] = []
            while let entry = readdir(directory) {
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
                }
                if let fd = Int32(name) { found.append(fd) }
            }
            return found
        }
    #endif

    /// A pipe whose two ends are closed on exec, so no other child started meanwhile inherits them.
    static func pipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        #if canImport(Glibc)
            if let pipeWithFlags {
                guard pipeWithFlags(&fds, O_CLOEXEC) == 0 else { return nil }
                return (fds[0], fds[1])
            }
            guard Glibc.pipe(&fds) == 0 else { return nil }
        #else
            // Darwin has no pipe2: another thread's fork can inherit the ends for a moment, but its
            // exec closes them (and ChildProcess's own spawns keep nothing but 0–2 anyway).
            guard Darwin.pipe(&fds) == 0 else { return nil }
        #endif
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return (fds[0], fds[1])
    }
}
