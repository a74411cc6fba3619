import Foundation
import Synchronization

/// A TCP port nobody listens on right now (bind to 0, read it back, close).
public enum FreePort {
    /// Ports handed out in this process: the kernel may offer a port again once its probe socket is
    /// closed, and two peers starting side by side on one port would answer each other's tests.
    private static let handedOut = Mutex<Set<Int>>([])

    public static func pick() throws -> Int {
        for _ in 0..<100 {
            let port = try probe()
            if handedOut.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw CocoaError(.fileReadUnknown)
    }

    static func probe() throws -> Int {
        let (fd, port) = try loopbackSocket(listening: false)
        close(fd)
        return port
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks (listening, when asked), and
    /// that port. The caller closes the descriptor.
    public static func loopbackSocket(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, TestPlatform.streamSocket, 0)
        guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listening || listen(fd, 16) == 0)
                    && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
