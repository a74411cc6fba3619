import Foundation

/// A binary property list value (bplist00), UIDs included: what NSKeyedArchiver writes and
/// PropertyListSerialization cannot express.
indirect enum BinaryPlistValue {
    case null
    case bool(Bool)
    case int(Int64)
    case real(Double)
    /// Seconds since 2001-01-01.
    case date(Double)
    case data([UInt8])
    case string(String)
    case uid(UInt64)
    case array([BinaryPlistValue])
    case dictionary([(String, BinaryPlistValue)])

    subscript(key: String) -> BinaryPlistValue? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.first { $0.0 == key }?.1
    }
}

/// bplist00 (CoreFoundation's binary property list) writer and reader.
enum BinaryPlist {
    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    static func encode(_ root: BinaryPlistValue) -> [UInt8] {
        var objects: [[UInt8]] = []
        // First pass: flatten into a table, parents before children.
        var table: [BinaryPlistValue] = []
        var children: [[Int]] = []
        func add(_ value: BinaryPlistValue) -> Int {
            table.append(value)
            children.append([])
            return table.count - 1
        }
        _ = add(root)
        var cursor = 0
        while cursor < table.count {
            let value = table[cursor]
            var refs: [Int] = []
            switch value {
            case .array(let values):
                for child in values { refs.append(add(child)) }
            case .dictionary(let entries):
                for (key, _) in entries { refs.append(add(.string(key))) }
                for (_, child) in entries { refs.append(add(child)) }
            default:
                break
            }
            children[cursor] = refs
            cursor += 1
        }
        let refSize = byteCount(for: UInt64(table.count))
        for (index, value) in table.enumerated() {
            objects.append(encodeObject(value, refs: children[index], refSize: refSize))
        }
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(out.count)
            out += object
        }
        let offsetTable = out.count
        let offsetSize = byteCount(for: UInt64(offsetTable))
        for offset in offsets { out += bigEndian(UInt64(offset), size: offsetSize) }
        out += [UInt8](repeating: 0, count: 6)
        out += [UInt8(offsetSize), UInt8(refSize)]
        out += bigEndian(UInt64(table.count), size: 8)
        out += bigEndian(0, size: 8)
        out += bigEndian(UInt64(offsetTable), size: 8)
        return out
    }

    private static func byteCount(for value: UInt64) -> Int {
        value < 1 << 8 ? 1 : value < 1 << 16 ? 2 : value < 1 << 32 ? 4 : 8
    }

    private static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private static func marker(_ high: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [high << 4 | UInt8(count)] }
        return [high << 4 | 0xF] + encodeInteger(Int64(count))
    }

    private static func encodeInteger(_ value: Int64) -> [UInt8] {
        if value < 0 { return [0x13] + bigEndian(UInt64(bitPattern: value), size: 8) }
        let size = byteCount(for: UInt64(value))
        let power: UInt8 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3
        return [0x10 | power] + bigEndian(UInt64(value), size: size)
    }

    private static func encodeObject(_ value: BinaryPlistValue, refs: [Int], refSize: Int) -> [UInt8] {
        switch value {
        case .null: return [0x00]
        case .bool(let flag): return [flag ? 0x09 : 0x08]
        case .int(let number): return encodeInteger(number)
        case .real(let number): return [0x23] + bigEndian(number.bitPattern, size: 8)
        case .date(let seconds): return [0x33] + bigEndian(seconds.bitPattern, size: 8)
        case .data(let bytes): return marker(0x4, count: bytes.count) + bytes
        case .string(let text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                return marker(0x5, count: text.utf8.count) + Array(text.utf8)
            }
            let units = Array(text.utf16)
            return marker(0x6, count: units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        case .uid(let number):
            let size = byteCount(for: number)
            return [0x80 | UInt8(size - 1)] + bigEndian(number, size: size)
        case .array:
            return marker(0xA, count: refs.count) + refs.flatMap { bigEndian(UInt64($0), size: refSize) }
        case .dictionary:
            return marker(0xD, count: refs.count / 2) + refs.flatMap { bigEndian(UInt64($0), size: refSize) }
        }
    }

    static func decode(_ bytes: [UInt8]) throws -> BinaryPlistValue {
        guard bytes.count >= 40, Array(bytes.prefix(8)) == Array("bplist00".utf8) else {
            throw FormatError(description: "not a binary property list")
        }
        let trailer = Array(bytes.suffix(32))
        let offsetSize = Int(trailer[6])
        let refSize = Int(trailer[7])
        func number(_ slice: ArraySlice<UInt8>) -> UInt64 { slice.reduce(0) { $0 << 8 | UInt64($1) } }
        let count = Int(number(trailer[8..<16]))
        let top = Int(number(trailer[16..<24]))
        let tableOffset = Int(number(trailer[24..<32]))
        guard (1...8).contains(offsetSize), (1...8).contains(refSize), count > 0, top < count,
            tableOffset + count * offsetSize <= bytes.count - 32
        else { throw FormatError(description: "bad binary property list trailer") }
        let offsets = (0..<count).map { index -> Int in
            let start = tableOffset + index * offsetSize
            return Int(number(bytes[start..<start + offsetSize]))
        }
        var visiting = Set<Int>()

        func read(_ index: Int, depth: Int) throws -> BinaryPlistValue {
            guard index < count, depth < 64, !visiting.contains(index) else {
                throw FormatError(description: "bad object reference in a binary property list")
            }
            visiting.insert(index)
            defer { visiting.remove(index) }
            var position = offsets[index]
            guard position < bytes.count else { throw FormatError(description: "object offset out of range") }
            func take(_ length: Int) throws -> ArraySlice<UInt8> {
                guard length >= 0, position + length <= bytes.count else {
                    throw FormatError(description: "binary property list truncated")
                }
                defer { position += length }
                return bytes[position..<position + length]
            }
            let marker = try take(1).first!
            func length() throws -> Int {
                let low = Int(marker & 0xF)
                guard low == 0xF else { return low }
                let intMarker = try take(1).first!
                guard intMarker >> 4 == 1 else { throw FormatError(description: "bad length") }
                return Int(number(try take(1 << Int(intMarker & 0xF))))
            }
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x08: return .bool(false)
                case 0x09: return .bool(true)
                default: return .null
                }
            case 0x1:
                let size = 1 << Int(marker & 0xF)
                let raw = number(try take(size))
                return .int(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
            case 0x2:
                let size = 1 << Int(marker & 0xF)
                let raw = number(try take(size))
                return .real(size == 4 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw))
            case 0x3:
                return .date(Double(bitPattern: number(try take(8))))
            case 0x4:
                return .data(Array(try take(try length())))
            case 0x5:
                return .string(String(decoding: try take(try length()), as: UTF8.self))
            case 0x6:
                let units = try take(try length() * 2)
                var scalars: [UInt16] = []
                var iterator = units.makeIterator()
                while let high = iterator.next(), let low = iterator.next() {
                    scalars.append(UInt16(high) << 8 | UInt16(low))
                }
                return .string(String(decoding: scalars, as: UTF16.self))
            case 0x8:
                return .uid(number(try take(Int(marker & 0xF) + 1)))
            case 0xA, 0xC:
                let items = try length()
                let refs = try take(items * refSize)
                return .array(
                    try (0..<items).map { item in
                        let start = refs.startIndex + item * refSize
                        return try read(Int(number(refs[start..<start + refSize])), depth: depth + 1)
                    })
            case 0xD:
                let items = try length()
                let refs = try take(items * 2 * refSize)
                func ref(_ slot: Int) -> Int {
                    let start = refs.startIndex + slot * refSize
                    return Int(number(refs[start..<start + refSize]))
                }
                var entries: [(String, BinaryPlistValue)] = []
                for item in 0..<items {
                    guard case .string(let key) = try read(ref(item), depth: depth + 1) else {
                        throw FormatError(description: "a dictionary key that is not a string")
                    }
                    entries.append((key, try read(ref(items + item), depth: depth + 1)))
                }
                return .dictionary(entries)
            default:
                throw FormatError(description: String(format: "unsupported object marker 0x%02x", marker))
            }
        }
        return try read(top, depth: 0)
    }
}

/// The Foundation objects DTX messages carry, as NSKeyedArchiver archives them.
indirect enum ArchivedObject: CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case data([UInt8])
    /// Seconds since 1970.
    case date(Double)
    case array([ArchivedObject])
    case dictionary([(String, ArchivedObject)])
    case error(domain: String, code: Int64, userInfo: [(String, ArchivedObject)])

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var intValue: Int64? {
        switch self {
        case .int(let number): return number
        case .bool(let flag): return flag ? 1 : 0
        case .double(let number): return Int64(exactly: number.rounded())
        default: return nil
        }
    }

    var boolValue: Bool? {
        switch self {
        case .bool(let flag): return flag
        case .int(let number): return number != 0
        default: return nil
        }
    }

    subscript(key: String) -> ArchivedObject? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.first { $0.0 == key }?.1
    }

    var description: String {
        switch self {
        case .null: return "nil"
        case .bool(let flag): return "\(flag)"
        case .int(let number): return "\(number)"
        case .double(let number): return "\(number)"
        case .string(let text): return "\"\(text)\""
        case .data(let bytes): return "<\(bytes.count) bytes>"
        case .date(let seconds): return "date(\(seconds))"
        case .array(let items): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let entries):
            return "{" + entries.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"
        case .error(let domain, let code, _): return "NSError(\(domain) \(code))"
        }
    }
}

/// NSKeyedArchiver / NSKeyedUnarchiver for the classes DTX uses (NSString, NSNumber, NSData,
/// NSDate, NSArray, NSDictionary, NSNull, NSError).
enum KeyedArchiver {
    static let unixToReferenceDate: Double = 978_307_200

    static func archive(_ root: ArchivedObject) -> [UInt8] {
        var objects: [BinaryPlistValue] = [.string("$null")]
        var classes: [String: UInt64] = [:]

        func classUID(_ name: String, _ hierarchy: [String]) -> UInt64 {
            if let uid = classes[name] { return uid }
            objects.append(
                .dictionary([
                    ("$classes", .array((hierarchy + ["NSObject"]).map { .string($0) })),
                    ("$classname", .string(name)),
                ]))
            classes[name] = UInt64(objects.count - 1)
            return UInt64(objects.count - 1)
        }

        func add(_ value: ArchivedObject) -> UInt64 {
            switch value {
            case .null:
                return 0
            case .bool(let flag):
                objects.append(.bool(flag))
            case .int(let number):
                objects.append(.int(number))
            case .double(let number):
                objects.append(.real(number))
            case .string(let text):
                objects.append(.string(text))
            case .data(let bytes):
                objects.append(.data(bytes))
            case .date(let seconds):
                objects.append(.null)
                let index = objects.count - 1
                let cls = classUID("NSDate", ["NSDate"])
                objects[index] = .dictionary([
                    ("$class", .uid(cls)), ("NS.time", .real(seconds - unixToReferenceDate)),
                ])
                return UInt64(index)
            case .array(let items):
                objects.append(.null)
                let index = objects.count - 1
                let refs = items.map { BinaryPlistValue.uid(add($0)) }
                let cls = classUID("NSArray", ["NSArray"])
                objects[index] = .dictionary([("$class", .uid(cls)), ("NS.objects", .array(refs))])
                return UInt64(index)
            case .dictionary(let entries):
                objects.append(.null)
                let index = objects.count - 1
                let keys = entries.map { BinaryPlistValue.uid(add(.string($0.0))) }
                let values = entries.map { BinaryPlistValue.uid(add($0.1)) }
                let cls = classUID("NSDictionary", ["NSDictionary"])
                objects[index] = .dictionary([
                    ("$class", .uid(cls)), ("NS.keys", .array(keys)), ("NS.objects", .array(values)),
                ])
                return UInt64(index)
            case .error(let domain, let code, let userInfo):
                objects.append(.null)
                let index = objects.count - 1
                let domainUID = add(.string(domain))
                let infoUID = userInfo.isEmpty ? 0 : add(.dictionary(userInfo))
                let cls = classUID("NSError", ["NSError"])
                objects[index] = .dictionary([
                    ("$class", .uid(cls)), ("NSCode", .int(code)), ("NSDomain", .uid(domainUID)),
                    ("NSUserInfo", .uid(infoUID)),
                ])
                return UInt64(index)
            }
            return UInt64(objects.count - 1)
        }

        let rootUID = add(root)
        return BinaryPlist.encode(
            .dictionary([
                ("$archiver", .string("NSKeyedArchiver")), ("$objects", .array(objects)),
                ("$top", .dictionary([("root", .uid(rootUID))])), ("$version", .int(100_000)),
            ]))
    }

    static func unarchive(_ bytes: [UInt8]) throws -> ArchivedObject {
        let plist = try BinaryPlist.decode(bytes)
        guard
            plist["$archiver"].map({
                if case .string("NSKeyedArchiver") = $0 { return true } else { return false }
            }) == true,
            case .array(let objects)? = plist["$objects"], case .uid(let root)? = plist["$top"]?["root"]
        else { throw BinaryPlist.FormatError(description: "not an NSKeyedArchiver archive") }

        func className(_ object: BinaryPlistValue) -> String? {
            guard case .uid(let cls)? = object["$class"], Int(cls) < objects.count,
                case .string(let name)? = objects[Int(cls)]["$classname"]
            else { return nil }
            return name
        }

        func decode(_ uid: UInt64, depth: Int) throws -> ArchivedObject {
            guard uid != 0 else { return .null }
            guard Int(uid) < objects.count, depth < 64 else {
                throw BinaryPlist.FormatError(description: "bad UID in an archive")
            }
            let object = objects[Int(uid)]
            func member(_ key: String) throws -> ArchivedObject {
                switch object[key] {
                case .uid(let child)?: return try decode(child, depth: depth + 1)
                case let value?: return plain(value)
                case nil: return .null
                }
            }
            func members(_ key: String) throws -> [ArchivedObject] {
                guard case .array(let refs)? = object[key] else { return [] }
                return try refs.map { ref in
                    if case .uid(let child) = ref { return try decode(child, depth: depth + 1) }
                    return plain(ref)
                }
            }
            switch object {
            case .dictionary:
                switch className(object) {
                case "NSDictionary", "NSMutableDictionary":
                    let keys = try members("NS.keys")
                    let values = try members("NS.objects")
                    return .dictionary(zip(keys, values).map { ($0.stringValue ?? $0.description, $1) })
                case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet":
                    return .array(try members("NS.objects"))
                case "NSString", "NSMutableString":
                    return try member("NS.string")
                case "NSData", "NSMutableData":
                    return try member("NS.data")
                case "NSDate":
                    if case .double(let seconds) = try member("NS.time") {
                        return .date(seconds + unixToReferenceDate)
                    }
                    return .null
                case "NSError":
                    let info = try member("NSUserInfo")
                    var entries: [(String, ArchivedObject)] = []
                    if case .dictionary(let pairs) = info { entries = pairs }
                    return .error(
                        domain: try member("NSDomain").stringValue ?? "",
                        code: try member("NSCode").intValue ?? 0,
                        userInfo: entries)
                default:
                    return .null  // NSNull and classes DTX never sends to a device
                }
            default:
                return plain(object)
            }
        }
        return try decode(root, depth: 0)
    }

    private static func plain(_ value: BinaryPlistValue) -> ArchivedObject {
        switch value {
        case .null, .uid, .array, .dictionary: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .real(let number): return .double(number)
        case .date(let seconds): return .date(seconds + unixToReferenceDate)
        case .data(let bytes): return .data(bytes)
        case .string(let text): return .string(text)
        }
    }
}
