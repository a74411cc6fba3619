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

/// A per-device lock, so two runs never deploy to one device at once: a ``LockFile``.
///
/// Removing the file on release could let a waiting run lock the removed file while a third creates
/// a new one, so whoever locks checks that the file it locked is still the one at the path, and
/// tries again if not.
public final class DeviceLock: Sendable {
    private let file: LockFile
    public var path: String { file.path }

    private init(file: LockFile) {
        self.file = file
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
            switch LockFile.lock(path) {
            case .failed(let code):
                throw DeviceLockUnusable(lockFile: path, reason: SystemErrorText.posix(code))
            case .busy(let pid):
                throw DeviceBusyError(device: device, pid: pid, lockFile: path)
            case .locked(let file):
                guard file.isAtPath else {
                    // The owner released (and removed) the file between our open and our flock.
                    file.unlock()
                    continue
                }
                file.recordOwner()
                return DeviceLock(file: file)
            }
        }
        throw DeviceBusyError(device: device, pid: LockFile.owner(path), lockFile: path)
    }

    /// Removes the file while still holding the lock (so nobody can lock it in between), then
    /// unlocks by closing.
    public func release() {
        unlink(path)
        file.unlock()
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
