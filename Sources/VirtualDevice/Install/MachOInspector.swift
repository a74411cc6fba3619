import Foundation

/// Reads the architectures of a Mach-O executable (thin or fat) from its header, the way installd
/// decides whether an app can run on the device (IncorrectArchitecture otherwise).
enum MachOInspector {
    /// Architecture names ("armv7", "arm64", …) of the slices, or nil if the file is not Mach-O.
    static func architectures(of url: URL) -> [String]? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 4096), head.count >= 12 else { return nil }
        let bytes = [UInt8](head)
        func bigEndian(_ offset: Int) -> UInt32 {
            guard offset + 4 <= bytes.count else { return 0 }
            return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        func littleEndian(_ offset: Int) -> UInt32 { bigEndian(offset).byteSwapped }
        switch bigEndian(0) {
        case 0xCAFE_BABE, 0xCAFE_BABF:
            // Fat header: big-endian count, then fat_arch (20 bytes) or fat_arch_64 (32 bytes) entries.
            let count = Int(bigEndian(4))
            let entrySize = bigEndian(0) == 0xCAFE_BABF ? 32 : 20
            guard count > 0, count < 32, 8 + count * entrySize <= bytes.count else { return nil }
            return (0..<count).map { index in
                let offset = 8 + index * entrySize
                return name(cpuType: bigEndian(offset), subtype: bigEndian(offset + 4))
            }
        case 0xCEFA_EDFE, 0xCFFA_EDFE:
            // Thin little-endian mach_header(_64): cputype and cpusubtype follow the magic.
            return [name(cpuType: littleEndian(4), subtype: littleEndian(8))]
        default:
            return nil
        }
    }

    /// Whether every slice of the executable carries a code signature (`LC_CODE_SIGNATURE`), as
    /// installd requires of any app it installs; false for a file that is no Mach-O.
    static func isSigned(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        // Executables of the twins' apps are small; a larger one is read up to 64 MiB.
        guard let data = try? handle.read(upToCount: 64 << 20), data.count >= 28 else { return false }
        let bytes = [UInt8](data)
        func be(_ offset: Int) -> UInt32 {
            guard offset >= 0, offset + 4 <= bytes.count else { return 0 }
            return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        func le(_ offset: Int) -> UInt32 { be(offset).byteSwapped }
        func signedSlice(at start: Int) -> Bool {
            let magic = be(start)
            guard magic == 0xCEFA_EDFE || magic == 0xCFFA_EDFE else { return false }
            let count = Int(le(start + 16))
            var command = start + (magic == 0xCFFA_EDFE ? 32 : 28)
            for _ in 0..<min(count, 4096) {
                let kind = le(command)
                let size = Int(le(command + 4))
                if kind == 0x1D { return true }  // LC_CODE_SIGNATURE
                guard size >= 8 else { return false }
                command += size
            }
            return false
        }
        switch be(0) {
        case 0xCAFE_BABE:
            let count = Int(be(4))
            guard count > 0, count < 32 else { return false }
            return (0..<count).allSatisfy { signedSlice(at: Int(be(8 + $0 * 20 + 8))) }
        default:
            return signedSlice(at: 0)
        }
    }

    /// <mach/machine.h> names.
    static func name(cpuType: UInt32, subtype rawSubtype: UInt32) -> String {
        let subtype = rawSubtype & 0x00FF_FFFF
        switch cpuType {
        case 12:
            switch subtype {
            case 6: return "armv6"
            case 9: return "armv7"
            case 10: return "armv7f"
            case 11: return "armv7s"
            case 12: return "armv7k"
            default: return "arm"
            }
        case 0x0100_000C: return subtype == 2 ? "arm64e" : "arm64"
        case 0x0200_000C: return "arm64_32"
        case 7: return "i386"
        case 0x0100_0007: return "x86_64"
        default: return "cpu\(cpuType)"
        }
    }

    /// Slices a device can run: an A5 runs armv7 only; 64-bit devices run arm64 (arm64e from the A12),
    /// and 32-bit slices only before iOS 11 dropped 32-bit apps.
    static func runnable(on profile: VirtualDeviceProfile, chipID: Int) -> Set<String> {
        if profile.cpuArchitecture.hasPrefix("armv7") {
            return Set(["armv6", "armv7"] + (chipID >= 0x8950 ? ["armv7s"] : []))
        }
        var result: Set<String> = ["arm64"]
        if DeviceIdentity.isModernChip(chipID) { result.insert("arm64e") }
        if profile.majorVersion < 11 { result.formUnion(["armv7", "armv7s"]) }
        return result
    }
}
