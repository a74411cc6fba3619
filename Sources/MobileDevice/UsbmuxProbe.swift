import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What usbmuxd answers to one `ListDevices` request, asked over a socket of our own.
///
/// libusbmuxd turns every malformed, truncated or missing reply into one negative errno (often
/// EPERM, "Operation not permitted"), which blames permissions for a daemon that is broken. When
/// it fails, this asks again itself and says what came back.
public enum UsbmuxProbe {
    public enum Finding: Sendable, Equatable {
        /// Nothing listens at the address (not running, wrong path).
        case notRunning(String)
        /// A well-formed reply: the failure lies elsewhere.
        case answered
        /// Something listens there but does not speak usbmuxd's protocol.
        case broken(String)
    }

    /// Asks usbmuxd at `address` (`UNIX:/path`, `/path` or `host:port`, as libusbmuxd reads
    /// `USBMUXD_SOCKET_ADDRESS`) for its device list, waiting at most `timeout` seconds per read.
    public static func probe(address: String, timeout: Double = 2) -> Finding {
        let fd: Int32
        switch openSocket(address) {
        case .failure(let text): return .notRunning(text)
        case .success(let descriptor): fd = descriptor
        }
        defer { close(fd) }
        var limit = timeval()
        limit.tv_sec = .init(timeout.rounded(.down))
        limit.tv_usec = .init((timeout - timeout.rounded(.down)) * 1e6)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let body = Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>MessageType</key><string>ListDevices</string>\
            <key>ClientVersionString</key><string>hadeploy</string><key>ProgName</key><string>hadeploy</string>\
            </dict></plist>
            """.utf8)
        var request = Data()
        for value in [UInt32(16 + body.count), 1, 8, 1] {
            withUnsafeBytes(of: value.littleEndian) { request.append(contentsOf: $0) }
        }
        request.append(body)
        #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)
        #else
            let flags: Int32 = 0
        #endif
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, flags) }
        guard sent == request.count else {
            return .broken("it closed the connection before taking the request (\(errnoText(errno)))")
        }
        let header = receive(fd, count: 16)
        if header.failed, header.data.isEmpty {
            return .broken("it accepted the connection but sent nothing within \(timeout) s")
        }
        guard header.data.count == 16 else {
            return header.data.isEmpty
                ? .broken("it closed the connection without answering")
                : .broken(
                    "it sent a truncated reply (\(header.data.count) of the 16 header bytes: "
                        + "\(hex(header.data))) and closed the connection")
        }
        let words = (0..<4).map { index in
            header.data.subdata(in: (index * 4)..<(index * 4 + 4)).withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))
            }
        }
        let (length, version, message) = (words[0], words[1], words[2])
        guard (16...(16 << 20)).contains(length), version <= 1, message == 8 || message == 1 else {
            return .broken(
                "its reply is not usbmuxd's protocol (header: length \(length), version \(version), "
                    + "message type \(message); first bytes \(hex(header.data)))")
        }
        let payload = receive(fd, count: Int(length) - 16)
        guard payload.data.count == Int(length) - 16 else {
            return .broken(
                "its reply announced \(length - 16) bytes but \(payload.data.count) came before "
                    + (payload.failed ? "the wait ended" : "it closed the connection"))
        }
        guard message == 8, let plist = PlistBridge.parse(payload.data), plist.dictionary != nil else {
            return .broken("its reply is not a property list (first bytes \(hex(payload.data)))")
        }
        guard plist["DeviceList"] != nil || plist["Number"] != nil else {
            return .broken("its reply is a property list without DeviceList or Number")
        }
        return .answered
    }

    private enum Connection {
        case success(Int32)
        case failure(String)
    }

    private static func openSocket(_ address: String) -> Connection {
        var path = address
        if address.hasPrefix("UNIX:") { path = String(address.dropFirst(5)) }
        if path.hasPrefix("/") {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return .failure(errnoText(errno)) }
            var socketAddress = sockaddr_un()
            socketAddress.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else {
                close(fd)
                return .failure("the socket path is too long")
            }
            withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let result = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard result == 0 else {
                let text = errnoText(errno)
                close(fd)
                return .failure(text)
            }
            return .success(fd)
        }
        guard let colon = path.lastIndex(of: ":"), let port = UInt16(path[path.index(after: colon)...]) else {
            return .failure("'\(address)' is neither UNIX:/path nor host:port")
        }
        let host = String(path[..<colon])
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, "\(port)", &hints, &list) == 0, let first = list else {
            return .failure("cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return .failure(errnoText(errno)) }
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let text = errnoText(errno)
            close(fd)
            return .failure(text)
        }
        return .success(fd)
    }

    /// Up to `count` bytes; `failed` when a read ended in an error or the timeout.
    private static func receive(_ fd: Int32, count: Int) -> (data: Data, failed: Bool) {
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

    private static func hex(_ data: Data) -> String {
        let shown = data.prefix(24).map { String(format: "%02x", $0) }.joined(separator: " ")
        return data.count > 24 ? shown + " …" : shown
    }

    private static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
