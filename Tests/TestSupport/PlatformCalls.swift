import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the tests ask the system that Linux (Glibc, /proc) and macOS (Darwin) spell differently, in
/// one place (scripts/platform-lint.sh fails on a platform spelling anywhere else in the tests, bar
/// the suites it lists as Linux-only).
public enum TestPlatform {
    /// `SOCK_STREAM` as `socket()` and `socketpair()` take it: a Glibc enum on Linux, an `Int32`
    /// macro on Darwin.
    #if canImport(Glibc)
        public static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        public static let streamSocket = SOCK_STREAM
    #endif

    /// `connect(2)` of `fd` to the UNIX socket at `path` (the address built where hadeploy builds it,
    /// `OwnerOnlySocket`); -1 with `errno` set when it fails, `ENAMETOOLONG` for a path too long.
    public static func connect(_ fd: Int32, toUnixSocket path: String) -> Int32 {
        guard let result = OwnerOnlySocket.connect(fd, to: path) else {
            errno = ENAMETOOLONG
            return -1
        }
        return result
    }

    /// `send(2)`, for types whose own `send` methods hide it.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.send(fd, bytes, count, flags)
        #else
            Darwin.send(fd, bytes, count, flags)
        #endif
    }

    /// `close(2)`, for types whose own `close` methods hide it.
    public static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }

    /// `kill(2)`, for types whose own `kill` methods hide it.
    @discardableResult
    public static func kill(_ pid: Int32, _ signal: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.kill(pid, signal)
        #else
            Darwin.kill(pid, signal)
        #endif
    }

    /// This process's peak resident memory so far, in bytes (`ru_maxrss`: KiB on Linux, bytes on
    /// Darwin).
    public static func peakResidentBytes() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
            return Int(usage.ru_maxrss) * 1024
        #else
            getrusage(RUSAGE_SELF, &usage)
            return Int(usage.ru_maxrss)
        #endif
    }

    /// Every process's command line as `ps` shows it to any local user (NULs as spaces): Linux
    /// `/proc/*/cmdline`; Darwin `ps -axww -o args=` (slower: fewer samples, none vacuous).
    public static func commandLines() -> [String] {
        #if os(Linux)
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.filter { $0.first?.isNumber == true }.compactMap { entry in
                guard let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"), !data.isEmpty
                else { return nil }
                return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            }
        #else
            return (run("/bin/ps", ["-axww", "-o", "args="]) ?? "").split(separator: "\n").map(String.init)
        #endif
    }

    /// `pid`'s parent for every process (Linux `/proc/*/stat`; Darwin `ps -ax -o pid=,ppid=`).
    public static func parentsByProcess() -> [Int32: Int32] {
        var parents: [Int32: Int32] = [:]
        #if os(Linux)
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for entry in entries {
                guard let child = Int32(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 1, let parent = Int32(fields[1]) { parents[child] = parent }
            }
        #else
            for line in (run("/bin/ps", ["-ax", "-o", "pid=,ppid="]) ?? "").split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count == 2, let child = Int32(fields[0]), let parent = Int32(fields[1]) {
                    parents[child] = parent
                }
            }
        #endif
        return parents
    }

    /// Whether `pid` is alive and not a zombie (nothing reaps a stand-in app as launchd would).
    public static func isRunning(_ pid: Int32) -> Bool {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let state = stat.split(separator: ")").last?.split(separator: " ").first
            else { return false }
            return state != "Z" && state != "X"
        #else
            guard
                let state = run("/bin/ps", ["-o", "stat=", "-p", "\(pid)"])?.trimmingCharacters(
                    in: .whitespaces),
                let first = state.first
            else { return false }
            return first != "Z"
        #endif
    }

    /// The same question in Python, for stand-in tools written in it: `alive(pid)`.
    public static let pythonIsRunning: String = {
        #if os(Linux)
            "def alive(p):\n"
                + "    state = open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[0]\n"
                + "    return state not in ('Z', 'X')\n"
        #else
            "def alive(p):\n"
                + "    out = subprocess.run(['/bin/ps', '-o', 'stat=', '-p', str(p)], capture_output=True, text=True)\n"
                + "    if out.returncode != 0 or not out.stdout.strip():\n        raise OSError('no process')\n"
                + "    return not out.stdout.strip().startswith('Z')\n"
        #endif
    }()

    #if !os(Linux)
        private static func run(_ tool: String, _ arguments: [String]) -> String? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return nil }
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
        }
    #endif
}
