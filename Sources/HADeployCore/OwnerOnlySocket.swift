import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Binds a UNIX socket at a path so that no other local user can ever connect to it: it is bound in
/// a fresh folder of mode 0700 beside `path`, made 0600 there, and linked into place (the bound
/// socket works under its new name), and the folder is removed.
///
/// Not with the umask: it belongs to the whole process, and while it is narrowed every file and
/// folder another thread creates is narrowed too (a folder of mode 0600 cannot even be entered).
public enum OwnerOnlySocket {
    /// Binds `fd` (an `AF_UNIX` stream socket) at `path`. Returns 0, or the `errno` of the step that
    /// failed: `EEXIST` when something is at `path` (it is left alone), `ENAMETOOLONG` when the path,
    /// or the folder beside it, does not fit a socket address.
    public static func bind(_ fd: Int32, at path: String) -> Int32 {
        let parent = (path as NSString).deletingLastPathComponent
        var template = Array(((parent.isEmpty ? "." : parent) + "/.hdXXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return errno }
        let folder = String(cString: made)
        defer { rmdir(folder) }
        let temporary = folder + "/s"
        guard var address = Self.address(temporary), Self.address(path) != nil else { return ENAMETOOLONG }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SystemIO.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { return errno }
        // A hard link, not a rename: it fails (EEXIST) instead of replacing what is at `path`.
        let placed = chmod(temporary, 0o600) == 0 && link(temporary, path) == 0
        let code = placed ? 0 : errno
        unlink(temporary)
        return code
    }

    /// Connects `fd` (an `AF_UNIX` stream socket) to the socket at `path`: connect(2)'s result (`errno`
    /// set when it is -1), or nil when `path` does not fit a socket address.
    public static func connect(_ fd: Int32, to path: String) -> Int32? {
        guard var address = Self.address(path) else { return nil }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SystemIO.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// `path` as a socket address, or nil when it is too long for one (104 bytes on Darwin, 108 on
    /// Linux, the terminating zero included).
    public static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
