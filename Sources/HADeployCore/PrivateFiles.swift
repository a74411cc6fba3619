import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files that hold secrets or say what was deployed where (pair records with private keys, device
/// keys, install records, lock files, known_hosts) are created owner-only from the first byte: mode
/// 0600 in directories of mode 0700. Writing first and `chmod`ing after would leave a window in which
/// another local user can read them, and the umask (often 022) would make them 0644.
public enum PrivateFiles {
    /// Creates `directory` (and missing parents, which get 0700 too) and makes it 0700.
    public static func createDirectory(_ directory: URL) throws {
        try LiveFileSystem().createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // An existing directory keeps its mode through createDirectory.
        if chmod(directory.path, 0o700) != 0 {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: directory.path])
        }
    }

    /// Writes `data` to `url` atomically (a 0600 temporary file beside it, then a rename), creating the
    /// directory 0700 when it is missing.
    public static func write(_ data: Data, to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        if !LiveFileSystem().fileExists(atPath: directory.path) { try createDirectory(directory) }
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let fd = open(temporary.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw error(errno, temporary) }
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = SystemIO.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        // The umask cannot widen 0600, but a stricter umask could have narrowed it to 0400.
        if failure == 0 && fchmod(fd, 0o600) != 0 { failure = errno }
        close(fd)
        if failure == 0 && rename(temporary.path, url.path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary.path)
            throw error(failure, url)
        }
    }

    /// Makes an existing file owner-only (a file another program wrote, such as libssh's known_hosts).
    public static func restrict(_ path: String) {
        chmod(path, 0o600)
    }

    private static func error(_ code: Int32, _ url: URL) -> Error {
        CocoaError(
            .fileWriteUnknown,
            userInfo: [
                NSFilePathErrorKey: url.path,
                NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(code)),
            ])
    }
}
