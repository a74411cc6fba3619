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
    private let file: LockFile
    public var path: String { file.path }

    private init(file: LockFile) {
        self.file = file
    }

    deinit { file.unlock() }

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
        switch LockFile.lock(path) {
        case .locked(let file):
            file.recordOwner()
            return StateFolderLock(file: file)
        case .busy(let pid):
            throw StateFolderBusy(folder: displayName, pid: pid, lockFile: path)
        case .failed(let code):
            throw StateFolderUnusable(folder: displayName, reason: SystemErrorText.posix(code))
        }
    }
}
