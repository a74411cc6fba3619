import Foundation
import HADeployCore

/// One usbmuxd message: a 16-byte little-endian header (length incl. header, version, message type,
/// tag) and a payload; type 8 carries an XML plist (PROTOCOL.md §1.2).
struct UsbmuxFrame: Equatable {
    static let headerSize = 16
    static let plistMessage: UInt32 = 8
    /// Real usbmuxd messages are a few KiB (device lists, pair records); anything this big is not usbmuxd.
    static let maximumSize = 4 << 20

    var version: UInt32
    var message: UInt32
    var tag: UInt32
    var payload: Data

    struct Malformed: Error {
        let reason: String
    }

    /// Takes one complete frame off the front of `buffer`; nil if more bytes are needed.
    static func take(from buffer: inout Data) throws -> UsbmuxFrame? {
        guard buffer.count >= headerSize else { return nil }
        let start = buffer.startIndex
        func word(_ offset: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(buffer[start + offset + $1]) << (8 * UInt32($1)) }
        }
        let length = Int(word(0))
        guard length >= headerSize, length <= maximumSize else {
            throw Malformed(reason: "frame length \(length)")
        }
        guard buffer.count >= length else { return nil }
        let frame = UsbmuxFrame(
            version: word(4), message: word(8), tag: word(12),
            payload: Data(buffer[(start + headerSize)..<(start + length)]))
        buffer = Data(buffer[(start + length)...])
        return frame
    }

    var encoded: Data {
        var data = Data(capacity: Self.headerSize + payload.count)
        for value in [UInt32(Self.headerSize + payload.count), version, message, tag] {
            withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
        }
        data.append(payload)
        return data
    }

    var plist: [String: Any]? {
        guard message == Self.plistMessage else { return nil }
        return (try? PropertyListSerialization.propertyList(from: payload, format: nil)) as? [String: Any]
    }

    /// A plist frame; replies must be XML, libusbmuxd parses nothing else (PROTOCOL.md §1.2).
    static func plist(_ dictionary: [String: Any], tag: UInt32) -> UsbmuxFrame {
        let payload =
            (try? PropertyListValue.encode(dictionary, .xml))
            ?? Data()
        return UsbmuxFrame(version: 1, message: plistMessage, tag: tag, payload: payload)
    }

    static func result(_ number: Int, tag: UInt32) -> UsbmuxFrame {
        plist(["MessageType": "Result", "Number": number], tag: tag)
    }
}
