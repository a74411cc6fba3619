import CPlist
import Foundation

/// Converts between libplist nodes and `PlistValue`. Callers own the nodes they pass in and the
/// nodes they get back (`plist_free`).
enum PlistBridge {
    /// libplist dates count seconds from 2001-01-01, like Apple's CFAbsoluteTime.
    private static let referenceDate = Date(timeIntervalSinceReferenceDate: 0)

    static func value(of node: plist_t?) -> PlistValue? {
        guard let node else { return nil }
        switch plist_get_node_type(node) {
        case PLIST_BOOLEAN:
            var value: UInt8 = 0
            plist_get_bool_val(node, &value)
            return .bool(value != 0)
        // Through the shim: libplist ≥ 2.3 spells PLIST_UINT as a macro, which Swift does not import.
        case hadeploy_plist_integer_type():
            var value: UInt64 = 0
            plist_get_uint_val(node, &value)
            // libplist 2.2 stores negative integers as their two's complement in a uint64.
            return .integer(Int64(bitPattern: value))
        case PLIST_UID:
            var value: UInt64 = 0
            plist_get_uid_val(node, &value)
            return .integer(Int64(bitPattern: value))
        case PLIST_REAL:
            var value: Double = 0
            plist_get_real_val(node, &value)
            return .real(value)
        case PLIST_STRING, PLIST_KEY:
            var length: UInt64 = 0
            guard let pointer = plist_get_string_ptr(node, &length) else { return .string("") }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(length))
            return .string(String(decoding: bytes, as: UTF8.self))
        case PLIST_DATA:
            var length: UInt64 = 0
            guard let pointer = plist_get_data_ptr(node, &length), length > 0 else { return .data(Data()) }
            return .data(Data(bytes: pointer, count: Int(length)))
        case PLIST_DATE:
            var seconds: Int32 = 0
            var microseconds: Int32 = 0
            hadeploy_plist_get_date_val(node, &seconds, &microseconds)
            return .date(Date(timeIntervalSinceReferenceDate: Double(seconds) + Double(microseconds) / 1e6))
        case PLIST_ARRAY:
            let count = plist_array_get_size(node)
            var items: [PlistValue] = []
            items.reserveCapacity(Int(count))
            for index in 0..<count {
                if let item = value(of: plist_array_get_item(node, index)) { items.append(item) }
            }
            return .array(items)
        case PLIST_DICT:
            var result: [String: PlistValue] = [:]
            var iterator: plist_dict_iter?
            plist_dict_new_iter(node, &iterator)
            guard let iterator else { return .dictionary([:]) }
            defer { free(iterator) }
            while true {
                var key: UnsafeMutablePointer<CChar>?
                var item: plist_t?
                plist_dict_next_item(node, iterator, &key, &item)
                guard let key else { break }
                if let converted = value(of: item) { result[String(cString: key)] = converted }
                free(key)
            }
            return .dictionary(result)
        default:
            return nil
        }
    }

    /// A new libplist node; the caller frees it (or hands it to a call that takes ownership).
    static func node(from value: PlistValue) -> plist_t {
        switch value {
        case .string(let text): return plist_new_string(text)
        case .integer(let number): return plist_new_uint(UInt64(bitPattern: number))
        case .real(let number): return plist_new_real(number)
        case .bool(let flag): return plist_new_bool(flag ? 1 : 0)
        case .data(let bytes):
            return bytes.withUnsafeBytes { buffer in
                plist_new_data(buffer.baseAddress?.assumingMemoryBound(to: CChar.self), UInt64(buffer.count))
            }
        case .date(let date):
            let interval = date.timeIntervalSince(referenceDate)
            let seconds = interval.rounded(.down)
            return hadeploy_plist_new_date(Int32(seconds), Int32((interval - seconds) * 1e6))
        case .array(let items):
            let array = plist_new_array()
            for item in items { plist_array_append_item(array, node(from: item)) }
            return array!
        case .dictionary(let entries):
            let dict = plist_new_dict()
            for (key, item) in entries { plist_dict_set_item(dict, key, node(from: item)) }
            return dict!
        }
    }

    /// Runs `body` with a temporary node built from `value`, freed afterwards.
    static func withNode<R>(_ value: PlistValue?, _ body: (plist_t?) throws -> R) rethrows -> R {
        guard let value else { return try body(nil) }
        let made = node(from: value)
        defer { plist_free(made) }
        return try body(made)
    }

    /// Converts and frees a node the C library returned to us.
    static func take(_ node: plist_t?) -> PlistValue? {
        defer { if let node { plist_free(node) } }
        return value(of: node)
    }

    /// Parses XML or binary plist bytes (e.g. an Info.plist) without Foundation's type guessing.
    static func parse(_ data: Data) -> PlistValue? {
        guard !data.isEmpty, data.count < Int(UInt32.max) else { return nil }
        var node: plist_t?
        data.withUnsafeBytes { buffer in
            hadeploy_plist_from_memory(
                buffer.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(buffer.count), &node)
        }
        return take(node)
    }

    /// The XML form of `value` (what usbmuxd and lockdownd read on the wire).
    static func xml(_ value: PlistValue) -> Data? {
        withNode(value) { node -> Data? in
            var bytes: UnsafeMutablePointer<CChar>?
            var length: UInt32 = 0
            plist_to_xml(node, &bytes, &length)
            guard let bytes else { return nil }
            defer { free(bytes) }
            return Data(bytes: bytes, count: Int(length))
        }
    }
}
