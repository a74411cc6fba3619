import Foundation
import Testing

@testable import MobileDevice

/// The entitlements of a signed executable, read from its code signature on any host (what ldid is
/// given on a jailbroken iPad).
@Suite struct MachOEntitlementsTests {
    static let xml = Data(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>application-identifier</key><string>ABCDE12345.com.hadashboard.app</string></dict></plist>
        """.utf8)

    /// mach_header (32-bit ARM) with one LC_CODE_SIGNATURE, the SuperBlob at `at`.
    static func thin(signature: Data?, at offset: Int = 512, magic: UInt32 = 0xFEED_FACE) -> Data {
        var data = Data()
        func le(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        le(magic)
        le(12)
        le(9)
        le(2)
        le(signature == nil ? 0 : 1)
        le(signature == nil ? 0 : 16)
        le(0)
        if magic == 0xFEED_FACF { le(0) }
        if let signature {
            le(MachOEntitlements.codeSignatureCommand)
            le(16)
            le(UInt32(offset))
            le(UInt32(signature.count))
        }
        data.append(Data(repeating: 0, count: offset - data.count))
        if let signature { data.append(signature) }
        return data
    }

    @Test func aSignedThinOrFatExecutableGivesItsEntitlements() {
        let signature = MachOEntitlements.superBlob(entitlements: Self.xml)
        #expect(MachOEntitlements.xml(in: Self.thin(signature: signature)) == Self.xml)
        #expect(MachOEntitlements.xml(in: Self.thin(signature: signature, magic: 0xFEED_FACF)) == Self.xml)

        // A fat file: the first slice unsigned, the second signed.
        let first = Self.thin(signature: nil)
        let second = Self.thin(signature: signature, magic: 0xFEED_FACF)
        var fat = Data()
        func be(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { fat.append(contentsOf: $0) } }
        be(0xCAFE_BABE)
        be(2)
        for (index, slice) in [first, second].enumerated() {
            be(12)
            be(9)
            be(UInt32(4096 * (index + 1)))
            be(UInt32(slice.count))
            be(12)
        }
        fat.append(Data(repeating: 0, count: 4096 - fat.count))
        fat.append(first)
        fat.append(Data(repeating: 0, count: 8192 - fat.count))
        fat.append(second)
        #expect(MachOEntitlements.xml(in: fat) == Self.xml)
    }

    @Test func anUnsignedTruncatedOrForeignFileGivesNone() {
        #expect(MachOEntitlements.xml(in: Self.thin(signature: nil)) == nil)
        #expect(MachOEntitlements.xml(in: Data("#!/bin/sh\necho hi\n".utf8)) == nil)
        var signature = MachOEntitlements.superBlob(entitlements: Self.xml)
        let whole = Self.thin(signature: signature)
        #expect(MachOEntitlements.xml(in: whole.prefix(whole.count - 10)) == nil, "a cut signature")
        // An entitlements blob that claims more than the signature holds.
        signature.replaceSubrange(24..<28, with: [0x7F, 0xFF, 0xFF, 0xFF])
        #expect(MachOEntitlements.xml(in: Self.thin(signature: signature)) == nil)
    }
}
