import Foundation

/// A property list value in Swift form: what the device's plists (lockdown, installation_proxy,
/// image mounter) are turned into as soon as they leave libplist, so no `plist_t` escapes.
enum PlistValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case data(Data)
    case date(Date)
    case array([PlistValue])
    case dictionary([String: PlistValue])

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var integer: Int64? {
        switch self {
        case .integer(let value): return value
        case .real(let value): return Int64(exactly: value.rounded())
        case .string(let value): return Int64(value)
        default: return nil
        }
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var data: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    var array: [PlistValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    var dictionary: [String: PlistValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    subscript(key: String) -> PlistValue? {
        dictionary?[key]
    }

    /// A short, human-readable rendering for messages (data shown by size, not content).
    var summary: String {
        switch self {
        case .string(let value): return value
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .bool(let value): return String(value)
        case .data(let value): return "<\(value.count) bytes>"
        case .date(let value): return value.description
        case .array(let values): return "[" + values.map(\.summary).joined(separator: ", ") + "]"
        case .dictionary(let values):
            return "{" + values.keys.sorted().map { "\($0): \(values[$0]!.summary)" }.joined(separator: ", ")
                + "}"
        }
    }
}
