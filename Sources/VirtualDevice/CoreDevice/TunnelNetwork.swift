import Logging
import NIOCore

/// The device end of one CoreDeviceProxy tunnel: the device's IPv6 address and a TCP endpoint on
/// it, accepting the host's connections to the RSD port and to each service port it lists.
///
/// The tunnel's byte stream is reliable and ordered (TLS over usbmuxd), so this is a small TCP:
/// handshake, ACKs, windows, MSS, FIN/RST, checksums and a retransmission timer for what the
/// host's own stack drops (pymobiledevice3's userspace stack drops packets when its queue is full).
/// Each accepted connection is handed to its service as a ``ByteStream`` (``TunnelAppBridge``).
///
/// Confined to `loop`, the tunnel connection's event loop: every call is made on it.
final class TunnelNetwork: @unchecked Sendable {
    typealias Accept = @Sendable (ByteStream) async -> Void

    struct ConnectionKey: Hashable {
        let remoteAddress: TunnelAddress
        let remotePort: UInt16
        let localPort: UInt16
    }

    let loop: EventLoop
    let deviceAddress: TunnelAddress
    let hostAddress: TunnelAddress
    /// The tunnel MTU agreed in the handshake: the largest IPv6 packet either side sends.
    let mtu: Int
    let logger: Logger
    private let emit: (ByteBuffer) -> Void
    private var listeners: [UInt16: Accept] = [:]
    private var connections: [ConnectionKey: TunnelTCPConnection] = [:]
    private var isShutDown = false
    /// Connections accepted so far (for tests and logs).
    private(set) var acceptedConnections = 0

    /// More than any client opens at once; a flood past it is refused instead of using up fds.
    static let maximumConnections = 256

    init(
        loop: EventLoop, deviceAddress: TunnelAddress, hostAddress: TunnelAddress, mtu: Int, logger: Logger,
        emit: @escaping (ByteBuffer) -> Void
    ) {
        self.loop = loop
        self.deviceAddress = deviceAddress
        self.hostAddress = hostAddress
        self.mtu = mtu
        self.logger = logger
        self.emit = emit
    }

    /// The MSS the device advertises: the MTU less the IPv6 and TCP headers.
    var maximumSegmentSize: Int { mtu - TunnelPacket.ipv6HeaderLength - TunnelPacket.tcpHeaderLength }

    func listen(port: UInt16, accept: @escaping Accept) {
        loop.preconditionInEventLoop()
        listeners[port] = accept
    }

    /// One packet from the host.
    func ingest(_ packet: ByteBuffer) {
        loop.preconditionInEventLoop()
        guard !isShutDown else { return }
        switch TunnelPacket.parse(packet) {
        case .malformed(let reason):
            logger.debug("tunnel: dropped a packet: \(reason)")
        case .other(let nextHeader):
            logger.trace("tunnel <- next header \(nextHeader), \(packet.readableBytes) bytes")
            // ICMPv6 (router/neighbour solicitations, MLD reports of the host stack): the device
            // sends none of its own, and nothing here depends on them.
            break
        case .tcp(let source, let destination, let segment):
            logger.trace(
                "tunnel <- \(segment.sourcePort)>\(segment.destinationPort) [\(segment.flags)] seq \(segment.sequence) ack \(segment.acknowledgment) win \(segment.window) len \(segment.payload.readableBytes)"
            )
            guard destination == deviceAddress else { return }
            let key = ConnectionKey(
                remoteAddress: source, remotePort: segment.sourcePort, localPort: segment.destinationPort)
            if let connection = connections[key] {
                connection.receive(segment)
                return
            }
            if segment.flags.contains(.syn), !segment.flags.contains(.ack), !segment.flags.contains(.rst),
                let accept = listeners[segment.destinationPort], connections.count < Self.maximumConnections
            {
                acceptedConnections += 1
                let connection = TunnelTCPConnection(network: self, key: key, syn: segment, accept: accept)
                connections[key] = connection
                connection.start()
                return
            }
            reset(answering: segment, from: source)
        }
    }

    /// RST for a segment no connection takes (closed port, or a connection already gone), RFC 9293
    /// §3.10.7.1.
    func reset(answering segment: TCPSegment, from source: TunnelAddress) {
        guard !segment.flags.contains(.rst) else { return }
        var reply = TCPSegment(
            sourcePort: segment.destinationPort, destinationPort: segment.sourcePort, sequence: 0,
            acknowledgment: 0, flags: .rst, window: 0, maximumSegmentSize: nil, payload: ByteBuffer())
        if segment.flags.contains(.ack) {
            reply.sequence = segment.acknowledgment
        } else {
            reply.acknowledgment = segment.sequence &+ segment.sequenceLength
            reply.flags.insert(.ack)
        }
        send(reply, to: source)
    }

    func send(_ segment: TCPSegment, to destination: TunnelAddress) {
        guard !isShutDown else { return }
        logger.trace(
            "tunnel -> \(segment.sourcePort)>\(segment.destinationPort) [\(segment.flags)] seq \(segment.sequence) ack \(segment.acknowledgment) win \(segment.window) len \(segment.payload.readableBytes)"
        )
        emit(TunnelPacket.build(source: deviceAddress, destination: destination, segment: segment))
    }

    func remove(_ key: ConnectionKey) {
        connections.removeValue(forKey: key)
    }

    /// The tunnel is gone: every connection's service sees its stream close.
    func shutDown() {
        loop.preconditionInEventLoop()
        guard !isShutDown else { return }
        isShutDown = true
        let open = connections.values
        connections.removeAll()
        for connection in open { connection.abort(sendReset: false) }
        listeners.removeAll()
    }
}
