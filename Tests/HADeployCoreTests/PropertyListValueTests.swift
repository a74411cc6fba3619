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

    /// The XML is written directly (not through `PropertyListEncoder`): what any reader gets back must
    /// be the same tree as from Foundation's own encoder, for every kind of value and nesting.
    @Test func theDirectXMLReadsBackAsFoundationsOwnEncoding() throws {
        var generator = SystemRandomNumberGenerator()
        func string() -> String {
            let pieces = [
                "a", "Key", "&", "<tag>", ">", "é", "😀", " ", "\t", "\"q\"", "'", "]]>", "\\", "ümlaut",
            ]
            return (0..<Int.random(in: 0...4, using: &generator)).map { _ in pieces.randomElement()! }
                .joined()
        }
        func value(_ depth: Int) -> PropertyListValue {
            switch Int.random(in: 0...(depth > 3 ? 6 : 8), using: &generator) {
            case 0: return .string(string())
            case 1: return .integer(Int64.random(in: Int64.min...Int64.max, using: &generator))
            case 2: return .real([0, -0.5, 1.5, 1e300, -2.25e-300, 3.141592653589793].randomElement()!)
            case 3: return .bool(Bool.random(using: &generator))
            case 4: return .data(Data((0..<Int.random(in: 0...100)).map { _ in UInt8.random(in: 0...255) }))
            case 5:
                return .date(
                    Date(timeIntervalSince1970: Double(Int.random(in: -2_000_000_000...4_000_000_000))))
            case 6: return .unsignedInteger(UInt64.random(in: UInt64(Int64.max) + 1...UInt64.max))
            case 7: return .array((0..<Int.random(in: 0...4)).map { _ in value(depth + 1) })
            default:
                var entries: [String: PropertyListValue] = [:]
                for _ in 0..<Int.random(in: 0...4) { entries[string()] = value(depth + 1) }
                return .dictionary(entries)
            }
        }
        for _ in 0..<300 {
            var entries: [String: PropertyListValue] = [:]
            for _ in 0..<Int.random(in: 0...6) { entries[string()] = value(0) }
            let tree = PropertyListValue.dictionary(entries)
            let direct = try PropertyListValue(try read(tree.encoded(.xml)))
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .xml
            let foundation = try PropertyListValue(try read(encoder.encode(tree)))
            #expect(direct == foundation, "\(tree.xmlDocument())")
        }
    }

    @Test func theDirectXMLHasAppleShape() throws {
        let tree = PropertyListValue.dictionary([
            "B": .array([]), "A": .dictionary([:]), "C": .string("x < y & z > w"), "D": .real(-.infinity),
            "E": .date(Date(timeIntervalSince1970: 1_700_000_000.75)), "F": .data(Data([0, 255])),
        ])
        #expect(
            tree.xmlDocument() == """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>A</key>
                \t<dict/>
                \t<key>B</key>
                \t<array/>
                \t<key>C</key>
                \t<string>x &lt; y &amp; z &gt; w</string>
                \t<key>D</key>
                \t<real>-infinity</real>
                \t<key>E</key>
                \t<date>2023-11-14T22:13:20Z</date>
                \t<key>F</key>
                \t<data>AP8=</data>
                </dict>
                </plist>

                """)
        let back = try read(tree.encoded(.xml))
        #expect(back["D"] as? Double == -.infinity)
        #expect(back["C"] as? String == "x < y & z > w")
    }
}
