import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Another hadeploy run holds the state folder.
public struct StateFolderBusy: Error, CustomStringConvertible, ExitStatusProviding {
    public var folder: String
    public var pid: Int32
    public var lockFile: String

    public var description: String {
        let owner = pid > 0 ? " (pid \(pid))" : ""
        return "another hadeploy run\(owner) is using \(folder): wait for it to finish or stop it, or give "
            + "this run a state folder of its own with --state DIR (lock: \(lockFile))"
    }

    public var exitStatus: ExitStatus { .failure }
}

/// The state folder could not be locked at all (not writable, not a folder).
public struct StateFolderUnusable: Error, CustomStringConvertible, ExitStatusProviding {
    public var folder: String
    public var reason: String

    public var description: String {
        "cannot use \(folder) as the state folder for virtual devices: \(reason). Pass another --state DIR, "
            + "or fix this one"
    }

    public var exitStatus: ExitStatus { .failure }
}

/// The lock a run holds on its state folder (`--virtual` twins keep pair records, installed apps,
/// sockets and jailbroken roots there): two runs in one checkout would otherwise reset each other's
/// twins mid-deploy.
///
/// As ``DeviceLock``: an `flock` held through an open descriptor for the whole run, which the kernel
/// drops when the process ends however it ends, so a killed run leaves nothing to clean up. The file
/// stays (removing it would let two runs lock two different files); the pid in it is only for the
/// message another run shows.
public final class StateFolderLock: Sendable {
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Locks `directory` (created 0700 when missing), or throws ``StateFolderBusy`` at once.
    /// `displayName` is the folder as the user gave it.
    public static func acquire(_ directory: URL, displayName: String, fileSystem: any FileSystem) throws
        -> StateFolderLock
    {
        var isDirectory: ObjCBool = false
        if fileSystem.fileExists(atPath: directory.path, isDirectory: &isDirectory),
            !isDirectory.boolValue
        {
            throw StateFolderUnusable(folder: displayName, reason: "it is a file, not a folder")
        }
        do {
            try fileSystem.createPrivateDirectory(at: directory)
        } catch {
            throw StateFolderUnusable(folder: displayName, reason: SystemErrorText.describe(error))
        }
        let path = directory.appendingPathComponent("hadeploy.lock").path
        while true {
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw StateFolderUnusable(folder: displayName, reason: SystemErrorText.posix(errno))
            }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                let text = "\(getpid())\n"
                _ = ftruncate(fd, 0)
                _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
                return StateFolderLock(path: path, descriptor: fd)
            }
            let code = errno
            close(fd)
            if code == EINTR { continue }
            if code == EWOULDBLOCK || code == EAGAIN {
                throw StateFolderBusy(folder: displayName, pid: owner(path), lockFile: path)
            }
            throw StateFolderUnusable(folder: displayName, reason: SystemErrorText.posix(code))
        }
    }

    private static func owner(_ path: String) -> Int32 {
        // At most 64 bytes are read: a pid is a few digits, whatever the file has become.
        guard let data = try? TextFileReader(limit: 64).readData(path),
            let text = String(data: data, encoding: .utf8)
        else { return 0 }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}
