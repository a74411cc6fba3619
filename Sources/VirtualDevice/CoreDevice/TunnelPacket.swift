import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv6 address inside a CoreDeviceProxy tunnel.
struct TunnelAddress: Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init(bytes: [UInt8]) {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        self.bytes = bytes
    }

    init?(_ text: String) {
        var storage = in6_addr()
        guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &storage) { Array($0) }
    }

    var description: String {
        var storage = in6_addr()
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &storage, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A fresh unique-local /64 (fdXX:XXXX:XXXX:XXXX::/64), as a device picks for each tunnel: the
    /// device is `::1` in it, the host `::2`.
    static func tunnelPair() -> (device: TunnelAddress, host: TunnelAddress) {
        var prefix: [UInt8] = [0xFD] + (0..<7).map { _ in UInt8.random(in: 0...255) }
        prefix += [UInt8](repeating: 0, count: 7)
        return (TunnelAddress(bytes: prefix + [1]), TunnelAddress(bytes: prefix + [2]))
    }
}

/// TCP header flags.
struct TCPFlags: OptionSet, Sendable, CustomStringConvertible {
    let rawValue: UInt8
    static let fin = TCPFlags(rawValue: 0x01)
    static let syn = TCPFlags(rawValue: 0x02)
    static let rst = TCPFlags(rawValue: 0x04)
    static let psh = TCPFlags(rawValue: 0x08)
    static let ack = TCPFlags(rawValue: 0x10)

    var description: String {
        [(TCPFlags.syn, "S"), (.fin, "F"), (.rst, "R"), (.psh, "P"), (.ack, ".")]
            .filter { contains($0.0) }.map(\.1).joined()
    }
}

/// One TCP segment, as carried in an IPv6 packet of the tunnel.
struct TCPSegment {
    var sourcePort: UInt16
    var destinationPort: UInt16
    var sequence: UInt32
    var acknowledgment: UInt32
    var flags: TCPFlags
    var window: UInt16
    /// The MSS option (SYN segments only).
    var maximumSegmentSize: Int?
    /// The window scale option (SYN segments only, RFC 7323 §2).
    var windowScale: UInt8? = nil
    var payload: ByteBuffer

    /// Sequence space the segment occupies (SYN and FIN count one each).
    var sequenceLength: UInt32 {
        UInt32(payload.readableBytes) + (flags.contains(.syn) ? 1 : 0) + (flags.contains(.fin) ? 1 : 0)
    }
}

/// IPv6 + TCP wire format (RFC 8200, RFC 9293): parsing the host's packets, building the device's.
enum TunnelPacket {
    static let ipv6HeaderLength = 40
    static let tcpHeaderLength = 20
    static let tcpProtocol: UInt8 = 6
    static let hopLimit: UInt8 = 64

    /// The IPv6 payload length field (bytes 4–5 of the 40-byte header).
    static func payloadLength(header: ByteBuffer) -> Int? {
        guard header.readableBytes >= ipv6HeaderLength,
            let first = header.getInteger(at: header.readerIndex, as: UInt8.self), first >> 4 == 6
        else { return nil }
        return header.getInteger(at: header.readerIndex + 4, endianness: .big, as: UInt16.self).map(Int.init)
    }

    enum ParseResult {
        case tcp(source: TunnelAddress, destination: TunnelAddress, segment: TCPSegment)
        /// Not a TCP packet (ICMPv6 neighbour discovery, MLD…): nothing the device answers here.
        case other(nextHeader: UInt8)
        case malformed(String)
    }

    /// Parses one IPv6 packet; the TCP checksum is verified.
    static func parse(_ packet: ByteBuffer) -> ParseResult {
        guard let payloadLength = payloadLength(header: packet) else { return .malformed("not IPv6") }
        let base = packet.readerIndex
        guard packet.readableBytes >= ipv6HeaderLength + payloadLength else {
            return .malformed("truncated: \(packet.readableBytes) bytes for a \(payloadLength)-byte payload")
        }
        let nextHeader = packet.getInteger(at: base + 6, as: UInt8.self)!
        guard nextHeader == tcpProtocol else { return .other(nextHeader: nextHeader) }
        let source = TunnelAddress(bytes: packet.getBytes(at: base + 8, length: 16)!)
        let destination = TunnelAddress(bytes: packet.getBytes(at: base + 24, length: 16)!)
        guard payloadLength >= tcpHeaderLength,
            var tcp = packet.getSlice(at: base + ipv6HeaderLength, length: payloadLength)
        else { return .malformed("TCP segment shorter than its header") }
        let sum = checksum(source: source, destination: destination, segment: tcp)
        guard sum == 0 || sum == 0xFFFF else { return .malformed("bad TCP checksum") }
        let sourcePort = tcp.readInteger(endianness: .big, as: UInt16.self)!
        let destinationPort = tcp.readInteger(endianness: .big, as: UInt16.self)!
        let sequence = tcp.readInteger(endianness: .big, as: UInt32.self)!
        let acknowledgment = tcp.readInteger(endianness: .big, as: UInt32.self)!
        let offset = Int(tcp.readInteger(as: UInt8.self)! >> 4) * 4
        let flags = TCPFlags(rawValue: tcp.readInteger(as: UInt8.self)! & 0x3F)
        let window = tcp.readInteger(endianness: .big, as: UInt16.self)!
        tcp.moveReaderIndex(forwardBy: 4)  // checksum, urgent pointer
        guard offset >= tcpHeaderLength, offset <= payloadLength else {
            return .malformed("TCP data offset \(offset)")
        }
        var options = tcp.readSlice(length: offset - tcpHeaderLength)!
        var mss: Int?
        var windowScale: UInt8?
        while let kind = options.readInteger(as: UInt8.self), kind != 0 {
            if kind == 1 { continue }
            guard let length = options.readInteger(as: UInt8.self), length >= 2,
                var value = options.readSlice(length: Int(length) - 2)
            else { break }
            if kind == 2, length == 4 {
                mss = value.readInteger(endianness: .big, as: UInt16.self).map(Int.init)
            }
            if kind == 3, length == 3 { windowScale = value.readInteger(as: UInt8.self) }
        }
        let segment = TCPSegment(
            sourcePort: sourcePort, destinationPort: destinationPort, sequence: sequence,
            acknowledgment: acknowledgment, flags: flags, window: window, maximumSegmentSize: mss,
            windowScale: windowScale, payload: tcp)
        return .tcp(source: source, destination: destination, segment: segment)
    }

    /// Builds the IPv6 packet carrying `segment` from `source` to `destination`.
    static func build(source: TunnelAddress, destination: TunnelAddress, segment: TCPSegment) -> ByteBuffer {
        let optionsLength = (segment.maximumSegmentSize == nil ? 0 : 4) + (segment.windowScale == nil ? 0 : 4)
        let tcpLength = tcpHeaderLength + optionsLength + segment.payload.readableBytes
        var packet = ByteBuffer()
        packet.reserveCapacity(ipv6HeaderLength + tcpLength)
        packet.writeInteger(UInt32(0x6000_0000), endianness: .big)
        packet.writeInteger(UInt16(tcpLength), endianness: .big)
        packet.writeInteger(tcpProtocol)
        packet.writeInteger(hopLimit)
        packet.writeBytes(source.bytes)
        packet.writeBytes(destination.bytes)
        packet.writeInteger(segment.sourcePort, endianness: .big)
        packet.writeInteger(segment.destinationPort, endianness: .big)
        packet.writeInteger(segment.sequence, endianness: .big)
        packet.writeInteger(segment.acknowledgment, endianness: .big)
        packet.writeInteger(UInt8((tcpHeaderLength + optionsLength) / 4) << 4)
        packet.writeInteger(segment.flags.rawValue)
        packet.writeInteger(segment.window, endianness: .big)
        packet.writeInteger(UInt16(0))  // checksum, filled below
        packet.writeInteger(UInt16(0))  // urgent pointer
        if let mss = segment.maximumSegmentSize {
            packet.writeBytes([2, 4, UInt8(mss >> 8), UInt8(mss & 0xFF)])
        }
        if let shift = segment.windowScale {
            packet.writeBytes([1, 3, 3, shift])
        }
        var payload = segment.payload
        packet.writeBuffer(&payload)
        let tcp = packet.getSlice(at: ipv6HeaderLength, length: tcpLength)!
        let sum = ~checksum(source: source, destination: destination, segment: tcp)
        packet.setInteger(sum, at: ipv6HeaderLength + 16, endianness: .big)
        return packet
    }

    /// The folded one's-complement sum of the IPv6 pseudo-header and the TCP segment (RFC 9293
    /// §3.1): 0xFFFF for a segment whose checksum field is right; its complement is the field.
    static func checksum(source: TunnelAddress, destination: TunnelAddress, segment: ByteBuffer) -> UInt16 {
        var pseudo: [UInt8] = source.bytes + destination.bytes
        let length = UInt32(segment.readableBytes)
        pseudo += [
            UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
        ]
        pseudo += [0, 0, 0, tcpProtocol]
        var sum = pseudo.withUnsafeBytes { onesComplementSum($0, initial: 0) }
        sum = segment.withUnsafeReadableBytes { onesComplementSum($0, initial: sum) }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }

    private static func onesComplementSum(_ bytes: UnsafeRawBufferPointer, initial: UInt64) -> UInt64 {
        var sum = initial
        var index = 0
        let count = bytes.count
        while index + 1 < count {
            sum &+= UInt64(bytes[index]) << 8 | UInt64(bytes[index + 1])
            index += 2
        }
        if index < count { sum &+= UInt64(bytes[index]) << 8 }
        return sum
    }
}

/// Sequence-number comparisons modulo 2^32 (RFC 9293 §3.4).
extension UInt32 {
    func isBefore(_ other: UInt32) -> Bool { Int32(bitPattern: self &- other) < 0 }
    func isAfter(_ other: UInt32) -> Bool { Int32(bitPattern: self &- other) > 0 }
}
