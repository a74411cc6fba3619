import Foundation

/// What a device's lockdownd (port 62078) answers to one `QueryType`, asked over a usbmuxd
/// connection of our own.
///
/// libimobiledevice waits out its own 30 s receive timeout on a reply that announces more bytes
/// than come, and reduces a reply that is not a property list to an error code. A healthy lockdownd
/// answers `QueryType` in milliseconds, so when a connect takes longer than that (or fails with a
/// protocol error) this asks again itself and says what came back.
enum LockdownProbe {
    enum Finding: Sendable, Equatable {
        /// A well-formed `QueryType` reply: the problem lies elsewhere (or the device is just slow).
        case answered
        /// Connected, but nothing came back in time (a hung lockdownd, or a very slow one).
        case silent
        /// Something answered that is not lockdownd's protocol: what was received.
        case broken(String)
        /// The probe could not reach the device's port at all (not listed, usbmuxd refused, a
        /// network-only entry); nothing to add to the caller's own error.
        case unreachable(String)
    }

    static let port: UInt16 = 62078
    /// The most a probe reads of a reply; real `QueryType` replies are a few hundred bytes.
    static let largestReply = 1 << 20

    /// Asks lockdownd on `udid` (through usbmuxd at `address`) for its type, waiting at most
    /// `timeout` seconds per read. Blocking: call off the cooperative pool (`inBackground`).
    static func probe(udid: String, address: String = UsbmuxDirectory.address, timeout: Double = 2)
        -> Finding
    {
        let directory: ProbeSocket
        switch ProbeSocket.open(address, timeout: timeout) {
        case .failure(let why): return .unreachable("usbmuxd could not be reached (\(why))")
        case .success(let socket): directory = socket
        }
        guard
            case .plist(let listing) = UsbmuxProbe.exchange(
                directory, request: ["MessageType": .string("ListDevices")], timeout: timeout),
            let entries = listing["DeviceList"]?.array
        else { return .unreachable("usbmuxd did not list its devices") }
        let wanted = normalized(udid)
        let listed = entries.filter { $0["Properties"]?["SerialNumber"]?.string.map(normalized) == wanted }
        let usbEntry = listed.first { $0["Properties"]?["ConnectionType"]?.string == "USB" }
        guard let deviceID = usbEntry?["DeviceID"]?.integer else {
            // A Wi-Fi device: libimobiledevice connects to its address directly, and so does the probe.
            let address = listed.lazy.compactMap { $0["Properties"]?["NetworkAddress"]?.data }.first
            guard let address, let host = host(ofNetworkAddress: address) else {
                return .unreachable("usbmuxd lists no connection to \(udid)")
            }
            switch ProbeSocket.openTCP(host: host, port: port, timeout: timeout) {
            case .failure(let why): return .unreachable("\(host):\(port) could not be reached (\(why))")
            case .success(let socket): return ask(socket, timeout: timeout)
            }
        }
        let socket: ProbeSocket
        switch ProbeSocket.open(address, timeout: timeout) {
        case .failure(let why): return .unreachable("usbmuxd could not be reached (\(why))")
        case .success(let opened): socket = opened
        }
        // PortNumber is the port in network byte order stored as a plain integer (PROTOCOL.md §1.7).
        let connect: [String: PlistValue] = [
            "MessageType": .string("Connect"), "DeviceID": .integer(deviceID),
            "PortNumber": .integer(Int64(port.byteSwapped)),
        ]
        guard case .plist(let result) = UsbmuxProbe.exchange(socket, request: connect, timeout: timeout),
            result["Number"]?.integer == 0
        else { return .unreachable("usbmuxd did not connect to port \(port)") }
        return ask(socket, timeout: timeout)
    }

    /// Runs `probe` on a thread of its own, so its blocking reads hold neither a cooperative thread
    /// nor one of the global queue's few (device workers may be blocked on those already).
    static func inBackground(udid: String, address: String = UsbmuxDirectory.address, timeout: Double = 2)
        async -> Finding
    {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: probe(udid: udid, address: address, timeout: timeout))
            }.start()
        }
    }

    /// `QueryType` in lockdownd's framing (a 32-bit big-endian length, then an XML plist).
    static func ask(_ socket: ProbeSocket, timeout: Double) -> Finding {
        let request: PlistValue = .dictionary([
            "Label": .string("hadeploy"), "Request": .string("QueryType"),
        ])
        guard let body = PlistBridge.xml(request) else {
            return .unreachable("the request could not be encoded")
        }
        var frame = Data()
        withUnsafeBytes(of: UInt32(body.count).bigEndian) { frame.append(contentsOf: $0) }
        frame.append(body)
        guard socket.sendAll(frame) else {
            return .broken("it closed the connection before taking the request")
        }
        let header = socket.receive(count: 4)
        if header.data.isEmpty {
            return header.failed ? .silent : .broken("it closed the connection without answering")
        }
        guard header.data.count == 4 else {
            return .broken(
                "it sent \(header.data.count) byte(s) (\(ProbeSocket.hex(header.data))) where a 4-byte "
                    + "length belongs, then " + (header.failed ? "nothing more" : "closed the connection"))
        }
        let length = header.data.withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) }
        guard length > 0, length <= largestReply else {
            let text = String(decoding: header.data.filter { (0x20..<0x7f).contains($0) }, as: UTF8.self)
            return .broken(
                "its reply is not lockdownd's protocol (a length of \(length) bytes; first bytes "
                    + "\(ProbeSocket.hex(header.data))"
                    + (text.count == 4 ? ", \"\(text)…\"" : "") + ")")
        }
        let payload = socket.receive(count: Int(length))
        guard payload.data.count == Int(length) else {
            return .broken(
                "its reply announced \(length) bytes but \(payload.data.count) came before "
                    + (payload.failed ? "the wait ended" : "it closed the connection")
                    + (payload.data.isEmpty ? "" : " (first bytes \(ProbeSocket.hex(payload.data)))"))
        }
        guard let reply = PlistBridge.parse(payload.data), let fields = reply.dictionary else {
            return .broken("its reply is not a property list (first bytes \(ProbeSocket.hex(payload.data)))")
        }
        guard fields["Type"] != nil || fields["Request"] != nil else {
            return .broken(
                "its reply is a property list without Request or Type (keys: "
                    + fields.keys.sorted().joined(separator: ", ") + ")")
        }
        return .answered
    }

    /// The host in usbmuxd's `NetworkAddress`: a sockaddr in the layout of the host usbmuxd runs on.
    /// BSD (Apple's usbmuxd on macOS, the twin): length, one-byte family (AF_INET 2, AF_INET6 30);
    /// Linux (usbmuxd2 since 2023-11): two-byte little-endian family (AF_INET 2, AF_INET6 10). Then
    /// both: the port, and the IPv4 address at offset 4 or the IPv6 address at offset 8.
    static func host(ofNetworkAddress data: Data) -> String? {
        let bytes = [UInt8](data)
        guard bytes.count >= 8 else { return nil }
        switch (bytes[0], bytes[1]) {
        case (16, 0x02), (0x02, 0):
            return bytes[4..<8].map(String.init).joined(separator: ".")
        case (28, 0x1E) where bytes.count >= 24, (10, 0) where bytes.count >= 24:
            return stride(from: 8, to: 24, by: 2).map {
                String(format: "%x", Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]))
            }
            .joined(separator: ":")
        default:
            return nil
        }
    }

    /// usbmuxd may list a 24-character serial without the dash that the UDID has (PROTOCOL.md §1.5).
    private static func normalized(_ udid: String) -> String {
        udid.replacingOccurrences(of: "-", with: "").lowercased()
    }
}

extension LockdownProbe {
    /// How long a lockdownd connect may take before a probe asks on the side (real devices answer
    /// in well under a second; a probe that finds a healthy reply changes nothing).
    static let patience: Duration = .seconds(2)
}
