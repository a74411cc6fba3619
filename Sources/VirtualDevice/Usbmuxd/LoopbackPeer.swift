import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who is at the other end of a loopback TCP connection. The TCP usbmuxd (`hadeploy virtual --port`)
/// hands out pair records (`ReadPairRecord`) as every usbmuxd does, so it must serve only the user
/// running the twins, as its UNIX socket does by its file mode: a connection from another user's
/// process is closed before it is read.
enum LoopbackPeer {
    /// Whether the process that opened the connection from `clientPort` to `serverPort` (both on the
    /// loopback) runs as this process's user (or root). On Linux the client's socket and its owner are
    /// in /proc/net/tcp; where that cannot be read the answer is no. Other systems have no such
    /// table: there every connection is accepted (the UNIX socket is the private choice there, and
    /// `hadeploy virtual --port` is refused on macOS).
    static func isSameUser(clientPort: Int, serverPort: Int) -> Bool {
        guard PlatformCalls.knowsLoopbackSocketOwners else { return true }
        guard let owner = PlatformCalls.loopbackSocketOwner(clientPort: clientPort, serverPort: serverPort)
        else { return false }
        return owner == geteuid() || owner == 0
    }
}
