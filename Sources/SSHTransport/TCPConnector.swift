import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens the TCP socket for a session ourselves (SSH_OPTIONS_FD), so the connect has a real deadline
/// and `SessionExecutor` can shut the socket down.
enum TCPConnector {
    /// Returns a connected, blocking socket. Runs on the session queue (getaddrinfo blocks).
    static func connect(host: String, port: Int, timeout: Double) throws(TCPConnectError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = SocketCalls.streamSocket
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw TCPConnectError(reason: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        // Not the context's clock: a synchronous connect(2)/poll(2) loop on the session's thread.
        let deadline = ContinuousClock.now + .checkedSeconds(timeout)
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd < 0 {
                lastError = String(cString: strerror(errno))
                continue
            }
            // Not inherited by processes hadeploy starts (they would keep the connection open).
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            // A server that drops the connection mid-write must not kill hadeploy (Darwin).
            SocketCalls.ignoreBrokenPipe(fd)
            let left = deadline - ContinuousClock.now
            let code = SocketCalls.connect(
                fd, info.pointee.ai_addr, info.pointee.ai_addrlen,
                timeout: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
            errno = code
            if code == 0 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            lastError =
                errno == ETIMEDOUT ? "no answer within \(Int(timeout)) s" : String(cString: strerror(errno))
            close(fd)
            if ContinuousClock.now >= deadline { break }
        }
        throw TCPConnectError(reason: lastError)
    }
}
