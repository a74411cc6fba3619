import Foundation

/// The entitlements a signed Mach-O executable carries in its code signature: the `LC_CODE_SIGNATURE`
/// load command of its first slice that has one points to a SuperBlob (`CSMAGIC_EMBEDDED_SIGNATURE`,
/// big-endian), whose `CSSLOT_ENTITLEMENTS` blob (`CSMAGIC_EMBEDDED_ENTITLEMENTS`) holds the XML plist
/// the build was signed with (<mach-o/loader.h>, <Kernel/kern/cs_blobs.h>). A jailbroken iPad runs the
/// app re-signed with ldid: only with these (`ldid -S<file>`, `application-identifier` among them) does
/// the app's keychain work, and the app keeps its login there.
public enum MachOEntitlements {
    public static let codeSignatureCommand: UInt32 = 0x1D
    public static let superBlobMagic: UInt32 = 0xFADE_0CC0
    public static let entitlementsMagic: UInt32 = 0xFADE_7171
    public static let entitlementsSlot: UInt32 = 5
    /// A real signature's entitlements are a few KiB; more is not an entitlements blob.
    static let largest = 1 << 20

    /// The entitlements plist (XML bytes) of `executable`, nil when it carries none (unsigned, ad hoc
    /// without entitlements, or not a Mach-O).
    public static func xml(in executable: Data) -> Data? {
        let bytes = [UInt8](executable)
        guard bytes.count >= 8 else { return nil }
        switch be(bytes, 0) {
        case 0xCAFE_BABE:
            let count = Int(be(bytes, 4))
            guard count > 0, count < 45 else { return nil }
            for index in 0..<count {
                let entry = 8 + index * 20
                guard entry + 20 <= bytes.count else { return nil }
                let offset = Int(be(bytes, entry + 8))
                let size = Int(be(bytes, entry + 12))
                guard offset >= 0, size > 0, offset + size <= bytes.count else { continue }
                if let found = thin(Array(bytes[offset..<(offset + size)])) { return found }
            }
            return nil
        default:
            return thin(bytes)
        }
    }

    private static func thin(_ bytes: [UInt8]) -> Data? {
        guard bytes.count >= 28 else { return nil }
        let header: Int
        switch le(bytes, 0) {
        case 0xFEED_FACE: header = 28
        case 0xFEED_FACF: header = 32
        default: return nil
        }
        let commands = Int(le(bytes, 16))
        var cursor = header
        for _ in 0..<min(commands, 4096) {
            guard cursor + 16 <= bytes.count else { return nil }
            let command = le(bytes, cursor)
            let size = Int(le(bytes, cursor + 4))
            guard size >= 8 else { return nil }
            if command == codeSignatureCommand {
                let offset = Int(le(bytes, cursor + 8))
                let length = Int(le(bytes, cursor + 12))
                guard offset >= 0, length >= 12, offset + length <= bytes.count else { return nil }
                return entitlements(superBlob: Array(bytes[offset..<(offset + length)]))
            }
            cursor += size
        }
        return nil
    }

    private static func entitlements(superBlob bytes: [UInt8]) -> Data? {
        guard be(bytes, 0) == superBlobMagic else { return nil }
        let count = Int(be(bytes, 8))
        for index in 0..<min(count, 64) {
            let entry = 12 + index * 8
            guard entry + 8 <= bytes.count else { return nil }
            guard be(bytes, entry) == entitlementsSlot else { continue }
            let offset = Int(be(bytes, entry + 4))
            guard offset + 8 <= bytes.count, be(bytes, offset) == entitlementsMagic else { return nil }
            let length = Int(be(bytes, offset + 4))
            guard length >= 8, length <= largest, offset + length <= bytes.count else { return nil }
            return Data(bytes[(offset + 8)..<(offset + length)])
        }
        return nil
    }

    /// A code signature SuperBlob holding only `xml` as its entitlements (what a test or demo
    /// executable carries in place of Apple's signature).
    public static func superBlob(entitlements xml: Data) -> Data {
        var blob = Data()
        func put(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { blob.append(contentsOf: $0) } }
        let entitlementsLength = UInt32(8 + xml.count)
        put(superBlobMagic)
        put(20 + entitlementsLength)
        put(1)
        put(entitlementsSlot)
        put(20)
        put(entitlementsMagic)
        put(entitlementsLength)
        blob.append(xml)
        return blob
    }

    private static func be(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset + 4 <= bytes.count else { return 0 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    private static func le(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset + 4 <= bytes.count else { return 0 }
        return UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset])
    }
}
