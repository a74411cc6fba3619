import Foundation

/// A property-list value as a typed tree, and the one way hadeploy writes property lists.
///
/// Foundation's plist serializer, given Swift values, refuses arrays of `Any` in a
/// statically linked Foundation on Linux (the `make install` / `make dist` binary): "property lists
/// cannot contain objects of type 'Not A Type'". `PropertyListEncoder` with `Encodable` values works in
/// every build (dynamic, static, macOS), so every plist hadeploy and its twins write goes through this
/// type. Reading stays with `PropertyListSerialization.propertyList(from:)`, which works everywhere.
public enum PropertyListValue: Sendable, Equatable, Encodable {
    case string(String)
    case integer(Int64)
    case unsignedInteger(UInt64)
    case real(Double)
    case bool(Bool)
    case data(Data)
    case date(Date)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    public enum Format: Sendable {
        case xml
        case binary
    }

    /// A value that cannot be a property list (nil, a type Foundation does not store), with its path.
    public struct Unrepresentable: Error, CustomStringConvertible {
        public let path: String
        public let type: String
        public var description: String { "\(path): a \(type) cannot be stored in a property list" }
    }

    /// Converts what Swift code builds (`[String: Any]` literals) and what `PropertyListSerialization`
    /// reads (NSNumber, `[AnyHashable: Any]`, Data, Date) into the typed tree.
    public init(_ object: Any) throws {
        self = try Self.convert(object, path: "")
    }

    private static func convert(_ object: Any, path: String) throws -> PropertyListValue {
        switch object {
        case let value as PropertyListValue: return value
        case let value as String: return .string(value)
        case let value as Substring: return .string(String(value))
        case let value as Data: return .data(value)
        case let value as Date: return .date(value)
        default: break
        }
        if let number = scalar(object) { return number }
        if let dictionary = object as? [String: Any] {
            var result: [String: PropertyListValue] = [:]
            for (key, value) in dictionary { result[key] = try convert(value, path: path + "/" + key) }
            return .dictionary(result)
        }
        if let dictionary = object as? [AnyHashable: Any] {
            var result: [String: PropertyListValue] = [:]
            for (key, value) in dictionary {
                guard let name = key.base as? String else {
                    throw Unrepresentable(path: path + "/<key>", type: "\(Swift.type(of: key.base)) key")
                }
                result[name] = try convert(value, path: path + "/" + name)
            }
            return .dictionary(result)
        }
        if let array = object as? [Any] {
            return .array(try array.enumerated().map { try convert($1, path: path + "/\($0)") })
        }
        throw Unrepresentable(path: path.isEmpty ? "/" : path, type: "\(Swift.type(of: object))")
    }

    /// Booleans first (an NSNumber 1 also casts to Bool: only a real Bool or a boolean NSNumber is one),
    /// then integers of every width, then floating point.
    private static func scalar(_ object: Any) -> PropertyListValue? {
        if let flag = object as? Bool {
            if Swift.type(of: object) == Bool.self { return .bool(flag) }
            if let number = object as? NSNumber, String(cString: number.objCType) == "c" {
                return .bool(flag)
            }
        }
        switch object {
        case let value as Int: return .integer(Int64(value))
        case let value as Int64: return .integer(value)
        case let value as Int32: return .integer(Int64(value))
        case let value as Int16: return .integer(Int64(value))
        case let value as Int8: return .integer(Int64(value))
        case let value as UInt64:
            return value <= UInt64(Int64.max) ? .integer(Int64(value)) : .unsignedInteger(value)
        case let value as UInt:
            return UInt64(value) <= UInt64(Int64.max)
                ? .integer(Int64(value)) : .unsignedInteger(UInt64(value))
        case let value as UInt32: return .integer(Int64(value))
        case let value as UInt16: return .integer(Int64(value))
        case let value as UInt8: return .integer(Int64(value))
        case let value as Double: return .real(value)
        case let value as Float: return .real(Double(value))
        default: break
        }
        if let number = object as? NSNumber {
            switch String(cString: number.objCType) {
            case "f", "d": return .real(number.doubleValue)
            case "Q", "L", "I", "S", "C":
                return number.uint64Value <= UInt64(Int64.max)
                    ? .integer(number.int64Value) : .unsignedInteger(number.uint64Value)
            default: return .integer(number.int64Value)
            }
        }
        return nil
    }

    public func encode(to encoder: any Encoder) throws {
        // Scalars go through a single-value container so that the encoder sees Data and Date as
        // themselves (a property list encoder writes <data> and <date>; their own encode(to:) would not).
        func single(_ value: some Encodable) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
        switch self {
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .dictionary(let values): try values.encode(to: encoder)
        case .string(let value): try single(value)
        case .integer(let value): try single(value)
        case .unsignedInteger(let value): try single(value)
        case .real(let value): try single(value)
        case .bool(let value): try single(value)
        case .data(let value): try single(value)
        case .date(let value): try single(value)
        }
    }

    /// The encoded property list.
    public func encoded(_ format: Format) throws -> Data {
        if format == .xml { return Data(xmlDocument().utf8) }
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(self)
    }

    /// Apple's XML property list, written straight from the tree: tab-indented, dictionary keys in
    /// order, `&`, `<` and `>` escaped, data as one line of base64, dates in whole seconds (UTC), as
    /// every reader takes them (libplist 2.2 and 2.7, Foundation, Python's plistlib).
    /// `PropertyListEncoder` built a tree of references for every message first: a twin answering
    /// lockdown and usbmuxd spent a tenth of its time there.
    public func xmlDocument() -> String {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        appendXML(to: &text, depth: 0)
        text += "</plist>\n"
        return text
    }

    private func appendXML(to text: inout String, depth: Int) {
        let indent = String(repeating: "\t", count: depth)
        text += indent
        switch self {
        case .string(let value): text += "<string>" + Self.escaped(value) + "</string>\n"
        case .integer(let value): text += "<integer>\(value)</integer>\n"
        case .unsignedInteger(let value): text += "<integer>\(value)</integer>\n"
        case .real(let value): text += "<real>" + Self.realText(value) + "</real>\n"
        case .bool(let value): text += value ? "<true/>\n" : "<false/>\n"
        case .data(let value): text += "<data>" + value.base64EncodedString() + "</data>\n"
        case .date(let value): text += "<date>" + Self.dateText(value) + "</date>\n"
        case .array(let values):
            guard !values.isEmpty else {
                text += "<array/>\n"
                return
            }
            text += "<array>\n"
            for value in values { value.appendXML(to: &text, depth: depth + 1) }
            text += indent + "</array>\n"
        case .dictionary(let values):
            guard !values.isEmpty else {
                text += "<dict/>\n"
                return
            }
            text += "<dict>\n"
            for key in values.keys.sorted() {
                text += indent + "\t<key>" + Self.escaped(key) + "</key>\n"
                values[key]?.appendXML(to: &text, depth: depth + 1)
            }
            text += indent + "</dict>\n"
        }
    }

    private static func escaped(_ text: String) -> String {
        guard
            text.utf8.contains(where: {
                $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">")
            })
        else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// As CoreFoundation writes a real: the shortest text that reads back the same number, and
    /// `nan`, `+infinity`, `-infinity`.
    private static func realText(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-infinity" : "+infinity" }
        return "\(value)"
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, whole seconds in UTC (what the XML format holds).
    private static func dateText(_ date: Date) -> String {
        Date.ISO8601FormatStyle().format(
            Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    /// Converts and encodes in one step: `try PropertyListValue.encode(["Key": 1], .xml)`.
    public static func encode(_ object: Any, _ format: Format) throws -> Data {
        try PropertyListValue(object).encoded(format)
    }
}
