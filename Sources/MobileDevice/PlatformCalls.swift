import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C calls MobileDevice spells differently on Linux (Glibc) and macOS (Darwin), in one place:
/// the rest of the target calls these (scripts/platform-lint.sh fails on a platform spelling
/// anywhere else).
enum PlatformCalls {
    /// `open(2)`, for types whose own `open` methods hide it.
    static func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        #if canImport(Glibc)
            Glibc.open(path, flags, mode)
        #else
            Darwin.open(path, flags, mode)
        #endif
    }

    /// `read(2)`, for types whose own `read` methods hide it.
    static func readFile(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.read(fd, buffer, count)
        #else
            Darwin.read(fd, buffer, count)
        #endif
    }

    /// The names in the folder at `path` (not `.` or `..`), read with readdir(3); nil when it cannot
    /// be opened.
    static func folderNames(_ path: String) -> [String]? {
        guard let folder = opendir(path) else { return nil }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            // Read in place: a record is only as long as its name (d_reclen), so copying the whole
            // 256-byte d_name out of it can read past the end of glibc's buffer (and did: SIGSEGV).
            guard let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { return nil }
            let name = String(
                cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The user ID of the process at the other end of the connected UNIX socket `fd` (the one that
    /// bound it): `SO_PEERCRED` on Linux, `getpeereid` on Darwin; nil when it cannot be told.
    static func peerUserID(_ fd: Int32) -> uid_t? {
        #if canImport(Glibc)
            // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc's module hides it behind _GNU_SOURCE).
            var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
            var length = socklen_t(MemoryLayout.size(ofValue: credentials))
            guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
                Int(length) == MemoryLayout.size(ofValue: credentials)
            else { return nil }
            return uid_t(credentials.uid)
        #else
            var user: uid_t = 0
            var group: gid_t = 0
            guard getpeereid(fd, &user, &group) == 0 else { return nil }
            return user
        #endif
    }

    /// How this system checks and restarts its usbmuxd, for messages: systemd's unit on Linux,
    /// Apple's launchd job on macOS.
    #if os(Linux)
        static let usbmuxdStatusCommand = "systemctl status usbmuxd"
        static let usbmuxdRestartCommand = "systemctl restart usbmuxd"
    #else
        static let usbmuxdStatusCommand = "sudo launchctl print system/com.apple.usbmuxd"
        static let usbmuxdRestartCommand = "sudo launchctl kickstart -k system/com.apple.usbmuxd"
    #endif
}
