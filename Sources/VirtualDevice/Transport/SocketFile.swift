import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A UNIX socket path this process listens on. Binding needs the path free, but a file there may be a
/// stale leftover (remove it) or another daemon's live socket (never steal it: its clients would
/// silently start talking to us). Stopping removes the file only if it is still the one we bound.
struct SocketFile: Sendable, Equatable {
    let path: String
    let device: UInt64
    let inode: UInt64

    /// Frees `path` for binding: a live listener there is an error, a dead socket file is removed.
    static func prepare(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw VirtualDeviceError.bindFailed(path, "a file that is not a socket is in the way")
        }
        if isListening(path) {
            throw VirtualDeviceError.bindFailed(path, "another daemon is listening there (stop it first)")
        }
        unlink(path)
    }

    /// A listening socket at `path` (freed by `prepare`) that only its owner can connect to, from its
    /// first moment (`OwnerOnlySocket`; connecting needs write permission): the usbmuxd socket hands
    /// out pair records, the control socket injects faults. Binding and then `chmod`ing would leave it
    /// open to everyone for a moment under a umask of 0. NIO takes it over (`withBoundSocket`).
    static func listeningSocket(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { throw VirtualDeviceError.bindFailed(path, String(cString: strerror(errno))) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let code = OwnerOnlySocket.bind(fd, at: path)
        guard code == 0 else {
            close(fd)
            throw VirtualDeviceError.bindFailed(path, String(cString: strerror(code)))
        }
        guard listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(path)
            throw VirtualDeviceError.bindFailed(path, reason)
        }
        return fd
    }

    /// The file now at `path` (after binding), to recognise it when stopping.
    static func bound(_ path: String) -> SocketFile? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return SocketFile(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Removes the socket file if it is still ours (not replaced by another daemon since).
    func remove() {
        guard Self.bound(path) == self else { return }
        unlink(path)
    }

    static func isListening(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return OwnerOnlySocket.connect(fd, to: path) == 0
    }
}
