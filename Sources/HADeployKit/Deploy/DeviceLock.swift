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
        "\(device) is being deployed by another hadeploy (pid \(pid)); wait for it to finish "
            + "(lock: \(lockFile))"
    }
}

/// A per-device lock file holding the owner's pid, so two runs never deploy to one device at once.
/// A lock whose pid is gone is stale and taken over.
public final class DeviceLock: Sendable {
    public let path: String

    private init(path: String) { self.path = path }

    public static func acquire(device: String, key: String, directory: URL) throws -> DeviceLock {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let safe = key.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        let path = directory.appendingPathComponent(String(safe) + ".lock").path
        // Two rounds: the second after removing a stale lock.
        for _ in 0..<2 {
            let fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644)
            if fd >= 0 {
                let text = "\(getpid())\n"
                _ = text.withCString { write(fd, $0, strlen($0)) }
                close(fd)
                return DeviceLock(path: path)
            }
            guard errno == EEXIST else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
            let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            let pid = Int32(content.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            if pid > 0 && pid != getpid() && (kill(pid, 0) == 0 || errno == EPERM) {
                throw DeviceBusyError(device: device, pid: pid, lockFile: path)
            }
            // Stale: its owner is gone (or the file is garbage).
            unlink(path)
        }
        throw DeviceBusyError(device: device, pid: 0, lockFile: path)
    }

    public func release() {
        unlink(path)
    }
}
