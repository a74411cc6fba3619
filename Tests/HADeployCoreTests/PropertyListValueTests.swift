import Foundation
import HADeployCore
import Testing

/// The one plist writer. The static-Foundation failure itself (arrays of `Any` refused by
/// `PropertyListSerialization.data(fromPropertyList:)`) only shows in the release archive, which the
/// end-to-end suites run (EndToEndTests/ReleaseBinaryTests); here the conversion is checked in detail.
@Suite struct PropertyListValueTests {
    private func read(_ data: Data) throws -> [String: Any] {
        try #require(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    @Test(arguments: [PropertyListValue.Format.xml, .binary])
    func swiftLiteralsWithMixedArraysRoundTrip(_ format: PropertyListValue.Format) throws {
        let source: [String: Any] = [
            "MessageType": "Result", "Number": 0, "Kiosk": true, "Off": false, "Ratio": 1.5,
            "Blob": Data([0, 1, 2, 255]), "When": Date(timeIntervalSince1970: 1_700_000_000),
            "Mixed": [1, "two", ["three": 3], [false]] as [Any],
            "DeviceList": [["DeviceID": 1, "Properties": ["SerialNumber": "abc"]]],
        ]
        let back = try read(PropertyListValue.encode(source, format))
        #expect(back["MessageType"] as? String == "Result")
        #expect(back["Number"] as? Int == 0)
        #expect(try PropertyListValue(back["Kiosk"] as Any) == .bool(true))
        #expect(try PropertyListValue(back["Off"] as Any) == .bool(false))
        #expect(try PropertyListValue(back["Number"] as Any) == .integer(0))
        #expect(back["Ratio"] as? Double == 1.5)
        #expect(back["Blob"] as? Data == Data([0, 1, 2, 255]))
        #expect((back["When"] as? Date)?.timeIntervalSince1970 == 1_700_000_000)
        let mixed = try #require(back["Mixed"] as? [Any])
        #expect(
            try PropertyListValue(mixed)
                == .array([
                    .integer(1), .string("two"), .dictionary(["three": .integer(3)]), .array([.bool(false)]),
                ]))
        let list = try #require(back["DeviceList"] as? [[String: Any]])
        #expect((list.first?["Properties"] as? [String: Any])?["SerialNumber"] as? String == "abc")
    }

    @Test func whatWasReadIsWrittenBackUnchanged() throws {
        let original: [String: Any] = [
            "HADashboard": "2", "HAThemeMode": 2, "HAKioskMode": true, "L": [1, 2],
        ]
        let first = try PropertyListValue.encode(original, .binary)
        let again = try PropertyListValue.encode(try read(first), .binary)
        #expect(try PropertyListValue(try read(again)) == PropertyListValue(original))
        // A dashboard named "2" stays a string, the integer stays an integer, YES stays a boolean.
        #expect(
            try PropertyListValue(try read(again))
                == .dictionary([
                    "HADashboard": .string("2"), "HAThemeMode": .integer(2), "HAKioskMode": .bool(true),
                    "L": .array([.integer(1), .integer(2)]),
                ]))
    }

    @Test func aValueNoPropertyListCanHoldIsNamedWithItsPath() {
        struct Opaque {}
        #expect(throws: PropertyListValue.Unrepresentable.self) {
            _ = try PropertyListValue.encode(["Outer": ["Inner": Opaque()]], .xml)
        }
        do {
            _ = try PropertyListValue.encode(["Outer": ["Inner": Opaque()]], .xml)
        } catch {
            #expect("\(error)".contains("/Outer/Inner"))
        }
    }

    @Test func xmlIsWhatLibusbmuxdParses() throws {
        let text = String(
            decoding: try PropertyListValue.encode(["MessageType": "Result"], .xml), as: UTF8.self)
        #expect(text.hasPrefix("<?xml"))
        #expect(text.contains("<key>MessageType</key>"))
        #expect(try PropertyListValue.encode(["A": 1], .binary).prefix(6) == Data("bplist".utf8))
    }
}
