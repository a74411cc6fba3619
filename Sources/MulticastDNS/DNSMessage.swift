import Foundation

/// One DNS message as multicast DNS uses it (RFC 1035 §4, RFC 6762): the questions and records a
/// browser and a responder of `_apple-mobdev2._tcp` exchange. Names are written uncompressed and read
/// with compression pointers, as every responder sends them.
public struct DNSMessage: Sendable, Equatable {
    public var id: UInt16 = 0
    /// Bit 15: a response (QR); 10: authoritative (AA).
    public var flags: UInt16 = 0
    public var questions: [Question] = []
    public var answers: [Record] = []
    public var authorities: [Record] = []
    public var additionals: [Record] = []

    public var isResponse: Bool { flags & 0x8000 != 0 }

    public init(
        id: UInt16 = 0, flags: UInt16 = 0, questions: [Question] = [], answers: [Record] = [],
        additionals: [Record] = []
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.additionals = additionals
    }

    public enum RecordType: UInt16, Sendable {
        case a = 1
        case ptr = 12
        case txt = 16
        case aaaa = 28
        case srv = 33
        case any = 255
    }

    public struct Question: Sendable, Equatable {
        public var name: String
        public var type: UInt16
        /// Bit 15 of the class: the asker would take a unicast answer (QU, RFC 6762 §5.4).
        public var unicastResponse: Bool

        public init(name: String, type: RecordType, unicastResponse: Bool = false) {
            self.init(name: name, rawType: type.rawValue, unicastResponse: unicastResponse)
        }

        init(name: String, rawType: UInt16, unicastResponse: Bool) {
            self.name = name
            self.type = rawType
            self.unicastResponse = unicastResponse
        }
    }

    public enum RecordData: Sendable, Equatable {
        case a(String)
        case aaaa(String)
        case ptr(String)
        case srv(priority: UInt16, weight: UInt16, port: UInt16, target: String)
        case txt([String])
        case other(type: UInt16, Data)

        var type: UInt16 {
            switch self {
            case .a: RecordType.a.rawValue
            case .aaaa: RecordType.aaaa.rawValue
            case .ptr: RecordType.ptr.rawValue
            case .srv: RecordType.srv.rawValue
            case .txt: RecordType.txt.rawValue
            case .other(let type, _): type
            }
        }
    }

    public struct Record: Sendable, Equatable {
        public var name: String
        public var data: RecordData
        public var ttl: UInt32
        /// Bit 15 of the class in a response: this record replaces what a cache holds (RFC 6762 §10.2).
        public var cacheFlush: Bool

        public init(name: String, data: RecordData, ttl: UInt32 = 120, cacheFlush: Bool = false) {
            self.name = name
            self.data = data
            self.ttl = ttl
            self.cacheFlush = cacheFlush
        }
    }

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    // MARK: writing

    public func encoded() -> Data {
        var out = Data()
        for value in [
            id, flags, UInt16(questions.count), UInt16(answers.count), UInt16(authorities.count),
            UInt16(additionals.count),
        ] {
            Self.append(value, to: &out)
        }
        for question in questions {
            Self.appendName(question.name, to: &out)
            Self.append(question.type, to: &out)
            Self.append(1 | (question.unicastResponse ? 0x8000 : 0), to: &out)
        }
        for record in answers + authorities + additionals {
            Self.appendName(record.name, to: &out)
            Self.append(record.data.type, to: &out)
            Self.append(1 | (record.cacheFlush ? 0x8000 : 0), to: &out)
            Self.append(UInt16(record.ttl >> 16), to: &out)
            Self.append(UInt16(record.ttl & 0xFFFF), to: &out)
            var body = Data()
            switch record.data {
            case .a(let address): body.append(contentsOf: Self.ipv4Bytes(address) ?? [0, 0, 0, 0])
            case .aaaa(let address):
                body.append(contentsOf: Self.ipv6Bytes(address) ?? [UInt8](repeating: 0, count: 16))
            case .ptr(let name): Self.appendName(name, to: &body)
            case .srv(let priority, let weight, let port, let target):
                Self.append(priority, to: &body)
                Self.append(weight, to: &body)
                Self.append(port, to: &body)
                Self.appendName(target, to: &body)
            case .txt(let strings):
                // An empty TXT record is one empty string (RFC 6763 §6.1).
                for string in strings.isEmpty ? [""] : strings {
                    let bytes = Array(string.utf8.prefix(255))
                    body.append(UInt8(bytes.count))
                    body.append(contentsOf: bytes)
                }
            case .other(_, let data): body.append(data)
            }
            Self.append(UInt16(body.count), to: &out)
            out.append(body)
        }
        return out
    }

    static func append(_ value: UInt16, to data: inout Data) {
        data.append(UInt8(value >> 8))
        data.append(UInt8(value & 0xFF))
    }

    /// Labels split on dots; a label is at most 63 bytes (longer ones are cut, never sent malformed).
    static func appendName(_ name: String, to data: inout Data) {
        for label in name.split(separator: ".", omittingEmptySubsequences: true) {
            let bytes = Array(label.utf8.prefix(63))
            data.append(UInt8(bytes.count))
            data.append(contentsOf: bytes)
        }
        data.append(0)
    }

    static func ipv4Bytes(_ address: String) -> [UInt8]? {
        let parts = address.split(separator: ".").compactMap { UInt8($0) }
        return parts.count == 4 ? parts : nil
    }

    static func ipv6Bytes(_ address: String) -> [UInt8]? {
        let halves = address.split(separator: "%").first.map(String.init) ?? address
        let sides = halves.components(separatedBy: "::")
        guard sides.count <= 2 else { return nil }
        func groups(_ text: String) -> [UInt16]? {
            text.isEmpty
                ? []
                : text.split(separator: ":").map { UInt16($0, radix: 16) }.reduce([UInt16]()) {
                    guard let value = $1 else { return $0 }
                    return $0 + [value]
                }
        }
        guard let head = groups(sides[0]), let tail = sides.count == 2 ? groups(sides[1]) : [] else {
            return nil
        }
        let missing = 8 - head.count - tail.count
        guard missing >= 0, sides.count == 2 || missing == 0 else { return nil }
        let all = head + [UInt16](repeating: 0, count: missing) + tail
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    // MARK: reading

    public init(decoding data: Data) throws {
        let bytes = [UInt8](data)
        var reader = Reader(bytes: bytes)
        id = try reader.u16()
        flags = try reader.u16()
        let counts = try (0..<4).map { _ in try reader.u16() }
        for _ in 0..<counts[0] {
            let name = try reader.readName()
            let type = try reader.u16()
            let klass = try reader.u16()
            questions.append(Question(name: name, rawType: type, unicastResponse: klass & 0x8000 != 0))
        }
        answers = try (0..<counts[1]).map { _ in try reader.record() }
        authorities = try (0..<counts[2]).map { _ in try reader.record() }
        additionals = try (0..<counts[3]).map { _ in try reader.record() }
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func u8() throws -> UInt8 {
            guard offset < bytes.count else { throw Malformed(description: "the message ends early") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() throws -> UInt16 {
            UInt16(try u8()) << 8 | UInt16(try u8())
        }

        mutating func take(_ count: Int) throws -> [UInt8] {
            guard count >= 0, offset + count <= bytes.count else {
                throw Malformed(description: "a field runs past the message")
            }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        /// A name, following compression pointers (at most 32, so a loop is an error, not a hang).
        mutating func readName() throws -> String {
            var labels: [String] = []
            var position = offset
            var jumped = false
            var jumps = 0
            while true {
                guard position < bytes.count else {
                    throw Malformed(description: "a name runs past the message")
                }
                let length = Int(bytes[position])
                if length == 0 {
                    position += 1
                    break
                }
                if length & 0xC0 == 0xC0 {
                    guard position + 1 < bytes.count else {
                        throw Malformed(description: "a cut name pointer")
                    }
                    jumps += 1
                    guard jumps <= 32 else { throw Malformed(description: "a name pointer loop") }
                    let target = (length & 0x3F) << 8 | Int(bytes[position + 1])
                    if !jumped { offset = position + 2 }
                    jumped = true
                    position = target
                    continue
                }
                guard position + 1 + length <= bytes.count else {
                    throw Malformed(description: "a label runs past the message")
                }
                labels.append(String(decoding: bytes[(position + 1)...(position + length)], as: UTF8.self))
                position += 1 + length
            }
            if !jumped { offset = position }
            return labels.joined(separator: ".")
        }

        mutating func record() throws -> Record {
            let name = try readName()
            let type = try u16()
            let klass = try u16()
            let ttl = UInt32(try u16()) << 16 | UInt32(try u16())
            let length = Int(try u16())
            let end = offset + length
            guard end <= bytes.count else { throw Malformed(description: "a record runs past the message") }
            let data: RecordData
            switch RecordType(rawValue: type) {
            case .a where length == 4:
                data = .a(try take(4).map(String.init).joined(separator: "."))
            case .aaaa where length == 16:
                let raw = try take(16)
                data = .aaaa(
                    stride(from: 0, to: 16, by: 2).map {
                        String(UInt16(raw[$0]) << 8 | UInt16(raw[$0 + 1]), radix: 16)
                    }
                    .joined(separator: ":"))
            case .ptr:
                data = .ptr(try readName())
            case .srv where length >= 7:
                data = .srv(priority: try u16(), weight: try u16(), port: try u16(), target: try readName())
            case .txt:
                var strings: [String] = []
                while offset < end {
                    let count = Int(try u8())
                    strings.append(String(decoding: try take(min(count, end - offset)), as: UTF8.self))
                }
                data = .txt(strings.filter { !$0.isEmpty })
            default:
                data = .other(type: type, Data(try take(length)))
            }
            offset = end
            return Record(name: name, data: data, ttl: ttl, cacheFlush: klass & 0x8000 != 0)
        }
    }
}
