import Foundation

/// An XPC object as RemoteXPC serialises it (payload magic 0x42133742, version 5): little-endian,
/// each value after a 32-bit type tag, strings/data/keys padded to 4 bytes.
indirect enum XPCValue: Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    /// Nanoseconds since 1970.
    case date(Int64)
    case data([UInt8])
    case string(String)
    case uuid([UInt8])
    case array([XPCValue])
    /// Keys in wire order.
    case dictionary([(String, XPCValue)])

    enum TypeTag: UInt32 {
        case null = 0x1000
        case bool = 0x2000
        case int64 = 0x3000
        case uint64 = 0x4000
        case double = 0x5000
        case date = 0x7000
        case data = 0x8000
        case string = 0x9000
        case uuid = 0xA000
        case array = 0xE000
        case dictionary = 0xF000
    }

    static func uuid(_ uuid: UUID) -> XPCValue {
        .uuid(withUnsafeBytes(of: uuid.uuid) { Array($0) })
    }

    subscript(key: String) -> XPCValue? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.first { $0.0 == key }?.1
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return "\(value)"
        case .int64(let value): return "\(value)"
        case .uint64(let value): return "\(value)u"
        case .double(let value): return "\(value)"
        case .date(let value): return "date(\(value))"
        case .data(let value): return "<\(value.count) bytes>"
        case .string(let value): return "\"\(value)\""
        case .uuid(let value): return "uuid(\(value.map { String(format: "%02x", $0) }.joined()))"
        case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let entries):
            return "{" + entries.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"
        }
    }

    // MARK: encoding

    func encode(into out: inout [UInt8]) {
        switch self {
        case .null:
            out.appendLittleEndian(TypeTag.null.rawValue)
        case .bool(let value):
            out.appendLittleEndian(TypeTag.bool.rawValue)
            out.appendLittleEndian(UInt32(value ? 1 : 0))
        case .int64(let value):
            out.appendLittleEndian(TypeTag.int64.rawValue)
            out.appendLittleEndian(UInt64(bitPattern: value))
        case .uint64(let value):
            out.appendLittleEndian(TypeTag.uint64.rawValue)
            out.appendLittleEndian(value)
        case .double(let value):
            out.appendLittleEndian(TypeTag.double.rawValue)
            out.appendLittleEndian(value.bitPattern)
        case .date(let value):
            out.appendLittleEndian(TypeTag.date.rawValue)
            out.appendLittleEndian(UInt64(bitPattern: value))
        case .data(let bytes):
            out.appendLittleEndian(TypeTag.data.rawValue)
            out.appendLittleEndian(UInt32(bytes.count))
            out += bytes
            out.padToFour(count: bytes.count)
        case .string(let text):
            out.appendLittleEndian(TypeTag.string.rawValue)
            let bytes = Array(text.utf8) + [0]
            out.appendLittleEndian(UInt32(bytes.count))
            out += bytes
            out.padToFour(count: bytes.count)
        case .uuid(let bytes):
            out.appendLittleEndian(TypeTag.uuid.rawValue)
            out += bytes.count == 16 ? bytes : [UInt8](repeating: 0, count: 16)
        case .array(let values):
            out.appendLittleEndian(TypeTag.array.rawValue)
            var body: [UInt8] = []
            body.appendLittleEndian(UInt32(values.count))
            for value in values { value.encode(into: &body) }
            out.appendLittleEndian(UInt32(body.count))
            out += body
        case .dictionary(let entries):
            out.appendLittleEndian(TypeTag.dictionary.rawValue)
            var body: [UInt8] = []
            body.appendLittleEndian(UInt32(entries.count))
            for (key, value) in entries {
                let keyBytes = Array(key.utf8) + [0]
                body += keyBytes
                body.padToFour(count: keyBytes.count)
                value.encode(into: &body)
            }
            out.appendLittleEndian(UInt32(body.count))
            out += body
        }
    }

    // MARK: decoding

    struct DecodingError: Error, CustomStringConvertible {
        let description: String
    }

    static func decode(_ reader: inout XPCReader, depth: Int = 0) throws -> XPCValue {
        guard depth < 64 else { throw DecodingError(description: "XPC object nested too deeply") }
        let raw = try reader.u32()
        guard let tag = TypeTag(rawValue: raw) else {
            throw DecodingError(description: String(format: "unsupported XPC type 0x%x", raw))
        }
        switch tag {
        case .null: return .null
        case .bool: return .bool(try reader.u32() != 0)
        case .int64: return .int64(Int64(bitPattern: try reader.u64()))
        case .uint64: return .uint64(try reader.u64())
        case .double: return .double(Double(bitPattern: try reader.u64()))
        case .date: return .date(Int64(bitPattern: try reader.u64()))
        case .data:
            let count = Int(try reader.u32())
            let bytes = try reader.bytes(count)
            try reader.skipPadding(count)
            return .data(bytes)
        case .string:
            let count = Int(try reader.u32())
            let bytes = try reader.bytes(count)
            try reader.skipPadding(count)
            return .string(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self))
        case .uuid:
            return .uuid(try reader.bytes(16))
        case .array:
            _ = try reader.u32()
            let count = Int(try reader.u32())
            var values: [XPCValue] = []
            for _ in 0..<count { values.append(try decode(&reader, depth: depth + 1)) }
            return .array(values)
        case .dictionary:
            _ = try reader.u32()
            let count = Int(try reader.u32())
            var entries: [(String, XPCValue)] = []
            for _ in 0..<count {
                let key = try reader.cString()
                entries.append((key, try decode(&reader, depth: depth + 1)))
            }
            return .dictionary(entries)
        }
    }
}

/// A cursor over little-endian XPC bytes.
struct XPCReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var remaining: Int { bytes.count - offset }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= remaining else {
            throw XPCValue.DecodingError(description: "XPC object truncated")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func u32() throws -> UInt32 {
        try bytes(4).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
    }

    mutating func u64() throws -> UInt64 {
        try bytes(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }
    }

    mutating func skipPadding(_ count: Int) throws {
        _ = try bytes(min(remaining, (4 - count % 4) % 4))
    }

    mutating func cString() throws -> String {
        guard let end = bytes[offset...].firstIndex(of: 0) else {
            throw XPCValue.DecodingError(description: "unterminated XPC key")
        }
        let text = String(decoding: bytes[offset..<end], as: UTF8.self)
        let count = end - offset + 1
        offset = end + 1
        try skipPadding(count)
        return text
    }
}

/// The RemoteXPC message frame (wrapper magic 0x29B00B92) that each HTTP/2 DATA payload carries.
struct XPCWrapper: Sendable {
    static let magic: UInt32 = 0x29B0_0B92
    static let payloadMagic: UInt32 = 0x4213_3742
    static let payloadVersion: UInt32 = 5
    static let headerLength = 24

    struct Flags: OptionSet, Sendable {
        let rawValue: UInt32
        static let alwaysSet = Flags(rawValue: 0x1)
        static let dataPresent = Flags(rawValue: 0x100)
        static let wantingReply = Flags(rawValue: 0x1_0000)
        static let reply = Flags(rawValue: 0x2_0000)
        static let fileTransferRequest = Flags(rawValue: 0x10_0000)
        static let fileTransferResponse = Flags(rawValue: 0x20_0000)
        static let initHandshake = Flags(rawValue: 0x40_0000)
    }

    var flags: Flags
    var messageID: UInt64
    var payload: XPCValue?

    func encoded() -> [UInt8] {
        var body: [UInt8] = []
        if let payload {
            body.appendLittleEndian(Self.payloadMagic)
            body.appendLittleEndian(Self.payloadVersion)
            payload.encode(into: &body)
        }
        var out: [UInt8] = []
        out.appendLittleEndian(Self.magic)
        out.appendLittleEndian(flags.rawValue)
        out.appendLittleEndian(UInt64(body.count))
        out.appendLittleEndian(messageID)
        return out + body
    }

    /// Takes one complete wrapper off the front of `buffer`; nil when it holds only part of one.
    static func take(from buffer: inout [UInt8]) throws -> XPCWrapper? {
        guard buffer.count >= headerLength else { return nil }
        var reader = XPCReader(Array(buffer[0..<headerLength]))
        guard try reader.u32() == magic else {
            throw XPCValue.DecodingError(description: "not a RemoteXPC message (bad magic)")
        }
        let flags = Flags(rawValue: try reader.u32())
        let size = try reader.u64()
        let messageID = try reader.u64()
        guard size <= 64 * 1024 * 1024 else {
            throw XPCValue.DecodingError(description: "a \(size)-byte RemoteXPC message")
        }
        guard buffer.count >= headerLength + Int(size) else { return nil }
        let body = Array(buffer[headerLength..<headerLength + Int(size)])
        buffer.removeFirst(headerLength + Int(size))
        var payload: XPCValue?
        if body.count >= 8 {
            var bodyReader = XPCReader(body)
            if try bodyReader.u32() == payloadMagic, try bodyReader.u32() == payloadVersion {
                payload = try XPCValue.decode(&bodyReader)
            }
        }
        return XPCWrapper(flags: flags, messageID: messageID, payload: payload)
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    /// Zero bytes up to the next multiple of four after `count` bytes.
    mutating func padToFour(count: Int) {
        append(contentsOf: [UInt8](repeating: 0, count: (4 - count % 4) % 4))
    }
}
