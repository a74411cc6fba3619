import Foundation
import HADeployCore
import NIOCore

/// Property-list helpers: reading with PropertyListSerialization, writing through PropertyListValue.
enum PropertyList {
    static func dictionary(from data: Data) throws -> [String: Any] {
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        guard let dictionary = object as? [String: Any] else {
            throw TransportError.protocolViolation("expected a property-list dictionary")
        }
        return dictionary
    }

    static func object(from data: Data) throws -> Any {
        try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    }

    /// XML encoding: libusbmuxd parses usbmuxd replies with the XML parser only (PROTOCOL.md §1.2).
    static func xml(_ object: Any) throws -> Data {
        try PropertyListValue.encode(object, .xml)
    }

    static func binary(_ object: Any) throws -> Data {
        try PropertyListValue.encode(object, .binary)
    }
}

extension ByteStream {
    /// Reads one "property list service" message (4-byte big-endian length + plist).
    func readPropertyList(timeout: TimeAmount) async throws -> Any {
        let body = try await readLengthPrefixed(maximum: 64 * 1024 * 1024, timeout: timeout)
        return try PropertyList.object(from: Data(body.readableBytesView))
    }

    /// Reads one framed plist that must be a dictionary.
    func readDictionary(timeout: TimeAmount) async throws -> [String: Any] {
        guard let dictionary = try await readPropertyList(timeout: timeout) as? [String: Any] else {
            throw TransportError.protocolViolation("expected a property-list dictionary")
        }
        return dictionary
    }

    /// Writes one framed plist (XML unless `binary`).
    func writePropertyList(_ object: Any, binary: Bool = false) async throws {
        let data = binary ? try PropertyList.binary(object) : try PropertyList.xml(object)
        try await writeLengthPrefixed(data)
    }
}
