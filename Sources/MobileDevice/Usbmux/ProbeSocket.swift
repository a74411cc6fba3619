import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking socket of our own, with a receive/send timeout, for the probes that ask a daemon
/// again when libusbmuxd or libimobiledevice reduced its answer to an error code. Closed on deinit.
final class ProbeSocket: @unchecked Sendable {
    let fd: Int32

    /// Owns `fd` from now on (closed on deinit), with `timeout` for each receive and send.
    init(fd: Int32, timeout: Double) {
        self.fd = fd
        SocketCalls.ignoreBrokenPipe(fd)
        var limit = timeval()
        limit.tv_sec = .init(timeout.rounded(.down))
        limit.tv_usec = .init((timeout - timeout.rounded(.down)) * 1e6)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// No receive or send timeout from now on (a relayed tunnel may be quiet for minutes).
    func clearTimeouts() {
        var none = timeval()
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
    }

    enum Opening {
        case success(ProbeSocket)
        case failure(String)
    }

    /// Connects to `UNIX:/path`, `/path` or `host:port` (as libusbmuxd reads `USBMUXD_SOCKET_ADDRESS`).
    static func open(_ address: String, timeout: Double) -> Opening {
        var path = address
        if address.hasPrefix("UNIX:") { path = String(address.dropFirst(5)) }
        if path.hasPrefix("/") { return openUnix(path, timeout: timeout) }
        guard let colon = path.lastIndex(of: ":"), let port = UInt16(path[path.index(after: colon)...]) else {
            return .failure("'\(address)' is neither UNIX:/path nor host:port")
        }
        return openTCP(host: String(path[..<colon]), port: port, timeout: timeout)
    }

    static func openTCP(host: String, port: UInt16, timeout: Double) -> Opening {
        var hints = addrinfo()
        hints.ai_socktype = SocketCalls.streamSocket
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, "\(port)", &hints, &list) == 0, let first = list else {
            return .failure("cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return .failure(errnoText(errno)) }
        let socket = ProbeSocket(fd: fd, timeout: timeout)
        // Bounded on every system (SO_SNDTIMEO bounds a connect on Linux only).
        let code = SocketCalls.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen, timeout: timeout)
        guard code == 0 else { return .failure(errnoText(code)) }
        return .success(socket)
    }

    /// A usbmuxd socket another local user could have made, or that another user's process serves,
    /// is never connected to (`UsbmuxdSocketTrust`).
    private static func openUnix(_ path: String, timeout: Double) -> Opening {
        if let problem = UsbmuxdSocketTrust.pathProblem(path) { return .failure("refused: \(problem)") }
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { return .failure(errnoText(errno)) }
        let socket = ProbeSocket(fd: fd, timeout: timeout)
        guard let result = OwnerOnlySocket.connect(fd, to: path) else {
            return .failure("the socket path is too long")
        }
        guard result == 0 else { return .failure(errnoText(errno)) }
        if let problem = UsbmuxdSocketTrust.peerProblem(fd, path: path) {
            return .failure("refused: \(problem)")
        }
        return .success(socket)
    }

    /// Sends all of `data`, across partial sends and signals (a signal handler interrupts a blocking
    /// send part-way: one `send` alone once cut a relayed usbmuxd reply short); false when the peer
    /// closed or the send timed out.
    func sendAll(_ data: Data) -> Bool {
        Self.sendAll(data, to: fd)
    }

    static func sendAll(_ data: Data, to fd: Int32) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = send(
                    fd, bytes.baseAddress! + offset, bytes.count - offset, SocketCalls.noSignalSendFlags)
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Up to `count` bytes; `failed` when a read ended in an error or the timeout (else the peer
    /// closed the connection, or all bytes came).
    func receive(count: Int) -> (data: Data, failed: Bool) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: min(max(count, 1), 65_536))
        while data.count < count {
            let wanted = min(buffer.count, count - data.count)
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, wanted, 0) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return (data, true) }
            if got == 0 { return (data, false) }
            data.append(contentsOf: buffer[0..<got])
        }
        return (data, false)
    }

    /// The first bytes of `data` in hex, for saying what a broken peer sent.
    static func hex(_ data: Data) -> String {
        let shown = data.prefix(24).map { String(format: "%02x", $0) }.joined(separator: " ")
        return data.count > 24 ? shown + " …" : shown
    }

    static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
