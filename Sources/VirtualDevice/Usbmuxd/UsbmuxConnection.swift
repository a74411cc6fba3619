import Foundation
import HADeployCore
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// One client connection to the virtual usbmuxd (PROTOCOL.md §1).
///
/// Every request but `Listen` and `Connect` comes on its own connection; `Connect` turns the
/// connection into a raw tunnel to a device port.
struct UsbmuxConnection {
    let stream: ByteStream
    let daemon: VirtualUsbmuxd
    let logger: Logger

    /// Result codes (usbmuxd's shared header). 6 (BADVERSION) is never sent: it makes libusbmuxd
    /// retry with the old binary protocol.
    enum ResultCode: Int {
        case ok = 0
        case badCommand = 1
        case badDevice = 2
        case connectionRefused = 3
    }

    /// How long an idle client connection is kept before the daemon drops it.
    static let idleTimeout: TimeAmount = .seconds(120)

    func run() async {
        defer { stream.close() }
        do {
            while true {
                let headerBytes = try await stream.read(
                    exactly: UsbmuxFrame.headerSize, timeout: Self.idleTimeout)
                let header: UsbmuxFrame.Header
                do {
                    header = try UsbmuxFrame.header(headerBytes.readableBytesView)
                } catch {
                    throw TransportError.protocolViolation("\(error)")
                }
                let payload = try await stream.read(exactly: header.payloadLength, timeout: .seconds(10))
                guard header.message == UsbmuxFrame.plistMessage,
                    let request = try? PropertyList.dictionary(from: Data(payload.readableBytesView))
                else {
                    try await reply(result: .badCommand, tag: header.tag)
                    continue
                }
                let keepGoing = try await handle(request, tag: header.tag)
                if !keepGoing { return }
            }
        } catch TransportError.closed {
            return
        } catch {
            logger.debug("usbmuxd connection ended: \(error)")
        }
    }

    /// Handles one request; false when the connection has been handed over (tunnel) or ended.
    private func handle(_ request: [String: Any], tag: UInt32) async throws -> Bool {
        let type = request["MessageType"] as? String ?? ""
        logger.trace("usbmuxd request \(type)")
        switch type {
        case "ListDevices":
            try await stream.write(
                Self.frame(body: Self.deviceList(await daemon.attachedDevices()), tag: tag))
        case "Listen":
            try await reply(result: .ok, tag: tag)
            await daemon.addListener(stream)
            // Events are written by the daemon; the client only ever closes this connection.
            while !stream.isClosed {
                _ = try? await stream.read(upTo: 65_536, timeout: .seconds(3600))
            }
            await daemon.removeListener(stream)
            return false
        case "Connect":
            return try await connect(request, tag: tag)
        case "ReadBUID":
            try await reply(["BUID": daemon.pairRecords.systemBUID], tag: tag)
        case "ReadPairRecord":
            guard let udid = request["PairRecordID"] as? String else {
                try await reply(number: 22, tag: tag)
                return true
            }
            if let record = daemon.pairRecords.read(udid: udid) {
                try await reply(["PairRecordData": record], tag: tag)
            } else {
                // Real usbmuxd answers ENOENT in the Number field (PROTOCOL.md §1.4).
                try await reply(number: 2, tag: tag)
            }
        case "SavePairRecord":
            guard let udid = request["PairRecordID"] as? String, let data = request["PairRecordData"] as? Data
            else {
                try await reply(number: 22, tag: tag)
                return true
            }
            try daemon.pairRecords.save(udid: udid, record: data)
            try await reply(result: .ok, tag: tag)
            if let deviceID = request["DeviceID"] as? Int {
                await daemon.broadcastPaired(deviceID: deviceID)
            }
        case "DeletePairRecord":
            guard let udid = request["PairRecordID"] as? String else {
                try await reply(number: 22, tag: tag)
                return true
            }
            try await reply(number: daemon.pairRecords.delete(udid: udid) ? 0 : 2, tag: tag)
        default:
            try await reply(result: .badCommand, tag: tag)
        }
        return true
    }

    private func connect(_ request: [String: Any], tag: UInt32) async throws -> Bool {
        let deviceID = request["DeviceID"] as? Int ?? 0
        // PortNumber is the port in network byte order stored as a plain integer (PROTOCOL.md §1.7).
        let raw = UInt16(truncatingIfNeeded: request["PortNumber"] as? Int ?? 0)
        let port = raw.byteSwapped
        switch await daemon.resolveConnect(deviceID: deviceID, port: port) {
        case .noDevice:
            try await reply(result: .badDevice, tag: tag)
            return true
        case .refused:
            try await reply(result: .connectionRefused, tag: tag)
            return true
        case .stalled(let runtime):
            runtime.logger.info("stall fault: not answering usbmuxd Connect")
            await stallUntilClosed()
            return false
        case .lockdown(let runtime):
            try await reply(result: .ok, tag: tag)
            await ServiceHost.serve(nil, on: stream, runtime: runtime)
            return false
        case .service(let runtime, let kind):
            try await reply(result: .ok, tag: tag)
            await ServiceHost.serve(kind, on: stream, runtime: runtime)
            return false
        }
    }

    /// Keeps the connection open without answering, until the client gives up (bounded anyway).
    private func stallUntilClosed() async {
        let deadline = ContinuousClock.now + .seconds(600)
        while !stream.isClosed && ContinuousClock.now < deadline {
            _ = try? await stream.read(upTo: 65_536, timeout: .seconds(5))
        }
    }

    // MARK: replies

    /// The last ListDevices reply's plist and the devices it lists: libimobiledevice asks for the
    /// list before every connection it makes, so a fleet asks for the same list hundreds of times.
    private static let lastDeviceList = NIOLockedValueBox<
        (devices: [VirtualUsbmuxd.AttachedDevice], body: Data)?
    >(
        nil)

    /// The ListDevices reply's plist for `devices`, encoded again only when the list changed.
    static func deviceList(_ devices: [VirtualUsbmuxd.AttachedDevice]) throws -> Data {
        if let last = lastDeviceList.withLockedValue({ $0 }), last.devices == devices { return last.body }
        let body = try PropertyList.xml(["DeviceList": devices.map { attachedMessage($0) }])
        lastDeviceList.withLockedValue { $0 = (devices, body) }
        return body
    }

    static func attachedMessage(_ device: VirtualUsbmuxd.AttachedDevice) -> [String: Any] {
        [
            "DeviceID": device.deviceID,
            "MessageType": "Attached",
            "Properties": properties(device),
        ]
    }

    static func properties(_ device: VirtualUsbmuxd.AttachedDevice) -> [String: Any] {
        if let host = device.networkAddress {
            // What Apple's usbmuxd lists for a Wi-Fi-synced device (its Bonjour name and address).
            return [
                "ConnectionType": "Network",
                "DeviceID": device.deviceID,
                "EscapedFullServiceName": "\(device.wifiAddress)@fe80::1._apple-mobdev2._tcp.local.",
                "InterfaceIndex": 1,
                "NetworkAddress": NetworkEndpoint.socketAddress(host),
                "SerialNumber": device.udid,
            ]
        }
        return [
            "ConnectionSpeed": 480_000_000,
            "ConnectionType": "USB",
            "DeviceID": device.deviceID,
            "LocationID": device.locationID,
            // Apple's USB product ids: 0x12a8 iPhone, 0x12ab iPad.
            "ProductID": device.isPad ? 0x12ab : 0x12a8,
            "SerialNumber": device.udid,
        ]
    }

    private func reply(result: ResultCode, tag: UInt32) async throws {
        try await reply(number: result.rawValue, tag: tag)
    }

    private func reply(number: Int, tag: UInt32) async throws {
        try await reply(["MessageType": "Result", "Number": number], tag: tag)
    }

    private func reply(_ plist: [String: Any], tag: UInt32) async throws {
        try await stream.write(Self.frame(plist, tag: tag))
    }

    /// A usbmuxd message: little-endian header + XML plist (binary replies are rejected by libusbmuxd).
    static func frame(_ plist: [String: Any], tag: UInt32) throws -> ByteBuffer {
        frame(body: try PropertyList.xml(plist), tag: tag)
    }

    static func frame(body: Data, tag: UInt32) -> ByteBuffer {
        ByteBuffer(bytes: UsbmuxFrame(tag: tag, payload: body).encoded)
    }
}
