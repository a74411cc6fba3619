import Foundation

/// One usbmuxd message (PROTOCOL.md §1.2): a 16-byte little-endian header — the whole length, the
/// protocol version, the message type, a tag the answer repeats — and the payload; type 8 carries a
/// plist. The one codec of every usbmuxd hadeploy speaks or serves: its relay and muxer, the twins'
/// usbmuxd and the USB-host tunnel's filter read and write frames through it alone, with one bound.
public struct UsbmuxFrame: Equatable, Sendable {
    public static let headerSize = 16
    /// The plist message type (the binary protocol's types are below it).
    public static let plistMessage: UInt32 = 8
    /// Real usbmuxd messages are a few KiB (device lists, pair records); anything bigger is not usbmuxd.
    public static let maximumSize = 4 << 20

    public var version: UInt32
    public var message: UInt32
    public var tag: UInt32
    public var payload: Data

    public init(version: UInt32 = 1, message: UInt32 = UsbmuxFrame.plistMessage, tag: UInt32, payload: Data) {
        self.version = version
        self.message = message
        self.tag = tag
        self.payload = payload
    }

    /// A frame no usbmuxd sends (a length shorter than its header, or beyond `maximumSize`).
    public struct Malformed: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { "not a usbmuxd message: \(reason)" }
    }

    /// A header's four words.
    public struct Header: Sendable {
        public var length: Int
        public var version: UInt32
        public var message: UInt32
        public var tag: UInt32
        /// How many payload bytes follow the header.
        public var payloadLength: Int { length - UsbmuxFrame.headerSize }
    }

    /// Reads the header at the front of `bytes` (at least `headerSize` of them).
    public static func header(_ bytes: some Collection<UInt8>) throws(Malformed) -> Header {
        guard bytes.count >= headerSize else { throw Malformed(reason: "a header of \(bytes.count) bytes") }
        var words: [UInt32] = []
        var index = bytes.startIndex
        for _ in 0..<4 {
            var word: UInt32 = 0
            for shift in 0..<4 {
                word |= UInt32(bytes[index]) << (8 * UInt32(shift))
                index = bytes.index(after: index)
            }
            words.append(word)
        }
        let length = Int(words[0])
        guard length >= headerSize, length <= maximumSize else {
            throw Malformed(reason: "frame length \(length)")
        }
        return Header(length: length, version: words[1], message: words[2], tag: words[3])
    }

    /// Takes one complete frame off the front of `buffer`; nil while more bytes are needed.
    public static func take(from buffer: inout Data) throws(Malformed) -> UsbmuxFrame? {
        guard buffer.count >= headerSize else { return nil }
        let header = try header(buffer.prefix(headerSize))
        guard buffer.count >= header.length else { return nil }
        let start = buffer.startIndex
        let frame = UsbmuxFrame(
            version: header.version, message: header.message, tag: header.tag,
            payload: Data(buffer[(start + headerSize)..<(start + header.length)]))
        buffer = Data(buffer[(start + header.length)...])
        return frame
    }

    /// The frame as it goes on the wire.
    public var encoded: Data {
        var data = Data(capacity: Self.headerSize + payload.count)
        for word in [UInt32(Self.headerSize + payload.count), version, message, tag] {
            withUnsafeBytes(of: word.littleEndian) { data.append(contentsOf: $0) }
        }
        data.append(payload)
        return data
    }

    /// A plist message of `dictionary` (property-list objects), as XML: libusbmuxd parses no other.
    public static func plist(_ dictionary: [String: Any], tag: UInt32) -> UsbmuxFrame {
        UsbmuxFrame(tag: tag, payload: (try? PropertyListValue.encode(dictionary, .xml)) ?? Data())
    }

    /// A `Result` message (0 OK, 1 bad command, 2 bad device, 3 connection refused; errno values
    /// for the pair-record requests).
    public static func result(_ number: Int, tag: UInt32) -> UsbmuxFrame {
        plist(["MessageType": "Result", "Number": number], tag: tag)
    }

    /// The payload of a plist message as a dictionary; nil for another message type or no dictionary.
    public var plist: [String: Any]? {
        guard message == Self.plistMessage else { return nil }
        return (try? PropertyListSerialization.propertyList(from: payload, format: nil)) as? [String: Any]
    }
}
