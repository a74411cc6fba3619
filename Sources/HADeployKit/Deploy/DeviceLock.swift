import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Another hadeploy run holds the device.
public struct DeviceBusyError: Error, CustomStringConvertible {
    public var device: String
    public var pid: Int32
    public var lockFile: String

    public var description: String {
        let owner = pid > 0 ? " (pid \(pid))" : ""
        return
            "\(device) is being deployed by another hadeploy\(owner); wait for it to finish (lock: \(lockFile))"
    }
}

/// A per-device lock, so two runs never deploy to one device at once.
///
/// The lock is an `flock` on the lock file, held through an open descriptor for the whole run: the
/// kernel gives it to exactly one process and drops it when that process ends however it ends, so a
/// dead owner's lock is free at once and there is no stale-lock takeover to race on. The pid written
/// into the file is only for the message another run shows. Removing the file on release could let
/// a waiting run lock the removed file while a third creates a new one, so whoever locks checks that
/// the file it locked is still the one at the path, and tries again if not.
public final class DeviceLock: Sendable {
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    public static func acquire(device: String, key: String, directory: URL) throws -> DeviceLock {
        do {
            try PrivateFiles.createDirectory(directory)
        } catch {
            throw DeviceLockUnusable(lockFile: directory.path, reason: SystemErrorText.describe(error))
        }
        let safe = key.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        let path = directory.appendingPathComponent(String(safe) + ".lock").path
        // Each round ends with the lock, a busy error, or a file that was replaced under us.
        for _ in 0..<100 {
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw failure(errno, path) }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                close(fd)
                if code == EWOULDBLOCK || code == EAGAIN {
                    throw DeviceBusyError(device: device, pid: owner(path), lockFile: path)
                }
                if code == EINTR { continue }
                throw failure(code, path)
            }
            var held = stat()
            var current = stat()
            guard fstat(fd, &held) == 0, stat(path, &current) == 0, held.st_ino == current.st_ino,
                held.st_dev == current.st_dev
            else {
                // The owner released (and removed) the file between our open and our flock.
                close(fd)
                continue
            }
            let text = "\(getpid())\n"
            _ = ftruncate(fd, 0)
            _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
            return DeviceLock(path: path, descriptor: fd)
        }
        throw DeviceBusyError(device: device, pid: owner(path), lockFile: path)
    }

    /// Removes the file while still holding the lock (so nobody can lock it in between), then
    /// unlocks by closing.
    public func release() {
        unlink(path)
        close(descriptor)
    }

    private static func owner(_ path: String) -> Int32 {
        // At most 64 bytes are read: a pid is a few digits, whatever the file has become.
        guard let data = try? TextFileReader(limit: 64).readData(path),
            let text = String(data: data, encoding: .utf8)
        else { return 0 }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    private static func failure(_ code: Int32, _ path: String) -> Error {
        DeviceLockUnusable(lockFile: path, reason: SystemErrorText.posix(code))
    }
}

/// The lock file could not be created or locked (a read-only cache, a full disk).
public struct DeviceLockUnusable: Error, CustomStringConvertible {
    public var lockFile: String
    public var reason: String

    public var description: String {
        "cannot lock the device for this run: \(lockFile): \(reason). Check that the folder is writable "
            + "(XDG_CACHE_HOME or ~/.cache)"
    }
}
