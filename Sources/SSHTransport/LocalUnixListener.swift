import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A listening UNIX socket at `<private 0700 temp dir>/usbmuxd`, mode 0600: only this user can reach it.
final class LocalUnixListener: @unchecked Sendable {
    let fd: Int32
    let directory: String
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/hadeploy-usbmux.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw SSHError.localFileFailed(
                path: NSTemporaryDirectory(), reason: String(cString: strerror(errno)))
        }
        directory = String(cString: made)
        chmod(directory, 0o700)
        path = directory + "/usbmuxd"
        guard OwnerOnlySocket.address(path) != nil else {
            rmdir(directory)
            throw SSHError.localFileFailed(
                path: path, reason: "path too long for a UNIX socket (TMPDIR is too deep)")
        }
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else {
            rmdir(directory)
            throw SSHError.localFileFailed(path: path, reason: String(cString: strerror(errno)))
        }
        // 0600 from its first moment, inside a folder of 0700.
        let code = OwnerOnlySocket.bind(fd, at: path)
        guard code == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(code == 0 ? errno : code))
            close(fd)
            unlink(path)
            rmdir(directory)
            throw SSHError.localFileFailed(path: path, reason: reason)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
    }

    /// A new client socket (non-blocking), or nil when none is waiting.
    func accept() -> Int32? {
        let client = systemAccept(fd)
        guard client >= 0 else { return nil }
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        SocketCalls.ignoreBrokenPipe(client)
        return client
    }

    /// Closes the socket; only the pump calls this, when it ends, so no call can use a reused number.
    func closeSocket() {
        close(fd)
    }

    func remove() {
        unlink(path)
        rmdir(directory)
    }
}
