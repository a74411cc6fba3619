import Foundation

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

    /// One usbmuxd reply: a property list, or what was wrong with it.
    enum Reply {
        case plist(PlistValue)
        case broken(String)
    }

    /// Asks usbmuxd at `address` (`UNIX:/path`, `/path` or `host:port`, as libusbmuxd reads
    /// `USBMUXD_SOCKET_ADDRESS`) for its device list, waiting at most `timeout` seconds per read.
    public static func probe(address: String, timeout: Double = 2) -> Finding {
        let socket: ProbeSocket
        switch ProbeSocket.open(address, timeout: timeout) {
        case .failure(let text): return .notRunning(text)
        case .success(let opened): socket = opened
        }
        switch exchange(socket, request: ["MessageType": .string("ListDevices")], timeout: timeout) {
        case .broken(let what): return .broken(what)
        case .plist(let plist):
            guard plist["DeviceList"] != nil || plist["Number"] != nil else {
                return .broken("its reply is a property list without DeviceList or Number")
            }
            return .answered
        }
    }

    /// Sends one request in usbmuxd's plist framing (version 1, message 8, tag 1) and reads its reply.
    static func exchange(_ socket: ProbeSocket, request fields: [String: PlistValue], timeout: Double)
        -> Reply
    {
        var fields = fields
        fields["ClientVersionString"] = .string("hadeploy")
        fields["ProgName"] = .string("hadeploy")
        guard let body = PlistBridge.xml(.dictionary(fields)) else {
            return .broken("the request could not be encoded")
        }
        var request = Data()
        for value in [UInt32(16 + body.count), 1, 8, 1] {
            withUnsafeBytes(of: value.littleEndian) { request.append(contentsOf: $0) }
        }
        request.append(body)
        guard socket.sendAll(request) else {
            return .broken(
                "it closed the connection before taking the request (\(ProbeSocket.errnoText(errno)))")
        }
        let header = socket.receive(count: 16)
        if header.failed, header.data.isEmpty {
            return .broken("it accepted the connection but sent nothing within \(timeout) s")
        }
        guard header.data.count == 16 else {
            return header.data.isEmpty
                ? .broken("it closed the connection without answering")
                : .broken(
                    "it sent a truncated reply (\(header.data.count) of the 16 header bytes: "
                        + "\(ProbeSocket.hex(header.data))) and closed the connection")
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
                    + "message type \(message); first bytes \(ProbeSocket.hex(header.data)))")
        }
        let payload = socket.receive(count: Int(length) - 16)
        guard payload.data.count == Int(length) - 16 else {
            return .broken(
                "its reply announced \(length - 16) bytes but \(payload.data.count) came before "
                    + (payload.failed ? "the wait ended" : "it closed the connection"))
        }
        guard message == 8, let plist = PlistBridge.parse(payload.data), plist.dictionary != nil else {
            return .broken("its reply is not a property list (first bytes \(ProbeSocket.hex(payload.data)))")
        }
        return .plist(plist)
    }
}
