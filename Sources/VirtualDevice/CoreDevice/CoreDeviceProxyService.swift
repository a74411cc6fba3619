import Foundation
import NIOCore

/// `com.apple.internal.devicecompute.CoreDeviceProxy`, the lockdown service of iOS 17.4+ that
/// carries the developer tunnel (no root needed on the host).
///
/// After StartService and TLS, the host sends `CDTunnel` + a big-endian 16-bit length + JSON
/// `{"type":"clientHandshakeRequest","mtu":16000}`; the device answers in the same framing with the
/// host's and its own IPv6 address and the RSD port. From then on the stream carries raw IPv6
/// packets back to back, handled by a ``TunnelNetwork``.
struct CoreDeviceProxyService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    static let magic = Array("CDTunnel".utf8)
    static let serviceName = "com.apple.internal.devicecompute.CoreDeviceProxy"
    /// The largest tunnel MTU the device agrees to.
    static let maximumMTU = 16_000
    static let minimumMTU = 1_280

    func run() async throws {
        let request = try await readHandshake()
        guard request["type"] as? String == "clientHandshakeRequest" else {
            throw TransportError.protocolViolation("CoreDeviceProxy: expected clientHandshakeRequest")
        }
        let requested = request["mtu"] as? Int ?? Self.minimumMTU
        let mtu = min(max(requested, Self.minimumMTU), Self.maximumMTU)
        let (device, host) = TunnelAddress.tunnelPair()
        let boot = await runtime.bootCount
        let table = RSDServiceTable.make(
            developerServices: PersonalizedImages.isMounted(udid: runtime.udid, boot: boot))
        let reply: [String: Any] = [
            "type": "serverHandshakeResponse",
            "clientParameters": [
                "address": host.description, "mtu": mtu, "netmask": "ffff:ffff:ffff:ffff::",
            ],
            "serverAddress": device.description,
            "serverRSDPort": Int(table.rsdPort),
        ]
        try await writeFrame(try JSONSerialization.data(withJSONObject: reply, options: [.sortedKeys]))

        let channel = stream.channel
        let network = TunnelNetwork(
            loop: channel.eventLoop, deviceAddress: device, hostAddress: host, mtu: mtu,
            logger: runtime.logger,
            emit: { packet in channel.writeAndFlush(packet, promise: nil) })
        let runtime = self.runtime
        try await channel.eventLoop.submit { table.install(on: network, runtime: runtime) }.get()
        runtime.logger.info(
            "CoreDeviceProxy tunnel: device \(device), host \(host), RSD port \(table.rsdPort), MTU \(mtu)")
        let number = await runtime.beginTunnel(stream)
        defer {
            channel.eventLoop.execute { network.shutDown() }
            Task { await runtime.endTunnel(number) }
        }
        while true {
            let header = try await stream.readAfterIdle(exactly: TunnelPacket.ipv6HeaderLength)
            guard let length = TunnelPacket.payloadLength(header: header) else {
                throw TransportError.protocolViolation(
                    "CoreDeviceProxy: the tunnel carried a non-IPv6 packet")
            }
            var packet = header
            if length > 0 {
                var payload = try await stream.read(exactly: length, timeout: .seconds(30))
                packet.writeBuffer(&payload)
            }
            let complete = packet
            channel.eventLoop.execute { network.ingest(complete) }
        }
    }

    private func readHandshake() async throws -> [String: Any] {
        var header = try await stream.read(exactly: Self.magic.count + 2, timeout: .seconds(30))
        guard header.readBytes(length: Self.magic.count) == Self.magic else {
            throw TransportError.protocolViolation("CoreDeviceProxy: no CDTunnel magic")
        }
        let length = Int(header.readInteger(endianness: .big, as: UInt16.self)!)
        let body = try await stream.read(exactly: length, timeout: .seconds(30))
        guard
            let json = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else {
            throw TransportError.protocolViolation("CoreDeviceProxy: the handshake is not a JSON object")
        }
        return json
    }

    private func writeFrame(_ body: Data) async throws {
        var frame = Self.magic
        frame.appendBigEndian(UInt16(body.count))
        try await stream.write(frame + Array(body))
    }
}

extension VirtualDeviceProfile {
    /// iOS 17.4 brought the CoreDeviceProxy lockdown service (17.0–17.3 need RemotePairing).
    var hasCoreDeviceProxy: Bool {
        let parts = productVersion.split(separator: ".").compactMap { Int($0) }
        guard let major = parts.first else { return false }
        return major > 17 || (major == 17 && (parts.count > 1 ? parts[1] : 0) >= 4)
    }
}
