import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A peer's lifeline: a FIFO this test process holds open for writing, close-on-exec from the start
/// so no other child (the tests spawn many at once) holds it. A peer that reads it as its stdin
/// (`twin.sh --lifeline`, or a server started through ``guarded(_:_:)``) sees end of file when this
/// process ends — however it ends, a crash included — or when the test calls ``cut()``, and stops.
public final class Lifeline: @unchecked Sendable {
    /// The FIFO: the peer's stdin.
    public let path: String
    private let lock = NSLock()
    private var writer: Int32

    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// A FIFO at `path` (replacing what was there).
    public init(at path: String) throws {
        self.path = path
        unlink(path)
        writer = mkfifo(path, 0o600) == 0 ? open(path, O_RDWR | O_CLOEXEC) : -1
        guard writer >= 0 else { throw Unavailable(description: "cannot make the lifeline \(path)") }
    }

    /// Ends the lifeline now (the peer stops); nothing happens the second time.
    public func cut() {
        lock.withLock {
            if writer >= 0 { close(writer) }
            writer = -1
        }
    }

    deinit { cut() }

    /// `/bin/sh` starting `executable` with `arguments` in its own place (same process id, stdin
    /// /dev/null) after leaving a watcher that reads the lifeline (the shell's stdin) and SIGKILLs the
    /// server at its end of file. The watcher is not the server's child: the server's descendants
    /// are its sessions only.
    public static func guarded(_ executable: String, _ arguments: [String]) -> (
        executable: String, arguments: [String]
    ) {
        // An asynchronous list's stdin is /dev/null unless redirected: the watcher gets the
        // lifeline through fd 3.
        let script = """
            server=$$
            exec 3<&0
            ( (cat >/dev/null; kill -KILL "$server") <&3 3<&- >/dev/null 2>&1 & )
            exec "$@" 3<&- </dev/null
            """
        return ("/bin/sh", ["-c", script, "lifeline", executable] + arguments)
    }
}
