import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive `flock` on a lock file, held through an open descriptor: the kernel gives it to
/// exactly one process and drops it when that process ends however it ends, so a dead owner's lock
/// is free at once and there is no stale-lock takeover to race on. The pid written into the file is
/// only for the message another run shows. ``DeviceLock`` and ``StateFolderLock`` are made of it.
struct LockFile: Sendable {
    let path: String
    let descriptor: Int32

    enum Attempt {
        case locked(LockFile)
        /// Another process holds it (its pid, 0 when the file does not say).
        case busy(owner: Int32)
        /// `open` or `flock` failed with this errno.
        case failed(errno: Int32)
    }

    /// Opens (creating it 0600) and locks `path`, without waiting for another holder.
    static func lock(_ path: String) -> Attempt {
        while true {
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return .failed(errno: errno) }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return .locked(LockFile(path: path, descriptor: fd)) }
            let code = errno
            close(fd)
            if code == EINTR { continue }
            if code == EWOULDBLOCK || code == EAGAIN { return .busy(owner: owner(path)) }
            return .failed(errno: code)
        }
    }

    /// Writes this process's pid into the file.
    func recordOwner() {
        let text = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    /// Whether the file locked is still the one at `path` (an owner that removes the file on release
    /// may have done so between this process's open and its flock).
    var isAtPath: Bool {
        var held = stat()
        var current = stat()
        return fstat(descriptor, &held) == 0 && stat(path, &current) == 0 && held.st_ino == current.st_ino
            && held.st_dev == current.st_dev
    }

    /// Unlocks, by closing.
    func unlock() {
        close(descriptor)
    }

    /// The pid the holder wrote (0 when the file does not say).
    static func owner(_ path: String) -> Int32 {
        // At most 64 bytes are read: a pid is a few digits, whatever the file has become.
        guard let data = try? TextFileReader(limit: 64).readData(path),
            let text = String(data: data, encoding: .utf8)
        else { return 0 }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}
