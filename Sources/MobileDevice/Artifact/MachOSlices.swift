/// Reads which CPU slices a Mach-O executable contains, from its first bytes only: a thin header
/// (`MH_MAGIC`/`MH_MAGIC_64`, stored little-endian for ARM) or a fat header (`FAT_MAGIC`,
/// big-endian, followed by one `fat_arch` per slice) — <mach-o/loader.h>, <mach-o/fat.h>.
public enum MachOSlices {
    /// Enough bytes for a fat header with 200 slices.
    public static let headerBytesNeeded = 8 + 200 * 20

    public enum Failure: Error, Equatable, Sendable {
        case notMachO
        case truncated
    }

    /// Architecture names such as "armv7", "arm64", "arm64e", "x86_64", in file order.
    public static func architectures(inHeader bytes: [UInt8]) throws -> [String] {
        guard bytes.count >= 8 else { throw Failure.truncated }
        let bigMagic = readUInt32BE(bytes, 0)
        switch bigMagic {
        case 0xCAFE_BABE, 0xCAFE_BABF:
            // fat_arch is 20 bytes; fat_arch_64 (magic ...BF) is 32.
            let stride = bigMagic == 0xCAFE_BABE ? 20 : 32
            let count = Int(readUInt32BE(bytes, 4))
            // Java class files share 0xCAFEBABE; their "count" (a version) is ≥ 45.
            guard count > 0, count < 45 else { throw Failure.notMachO }
            guard bytes.count >= 8 + count * stride else { throw Failure.truncated }
            return (0..<count).map { index in
                let offset = 8 + index * stride
                return name(cpuType: readUInt32BE(bytes, offset), subtype: readUInt32BE(bytes, offset + 4))
            }
        case 0xFEED_FACE, 0xFEED_FACF:
            // Big-endian thin binary (PowerPC era); read fields big-endian.
            return [name(cpuType: readUInt32BE(bytes, 4), subtype: readUInt32BE(bytes, 8))]
        case 0xCEFA_EDFE, 0xCFFA_EDFE:
            return [name(cpuType: readUInt32LE(bytes, 4), subtype: readUInt32LE(bytes, 8))]
        default:
            throw Failure.notMachO
        }
    }

    static func name(cpuType: UInt32, subtype: UInt32) -> String {
        // The top byte of cpusubtype carries capability flags (e.g. pointer authentication ABI).
        let sub = subtype & 0x00FF_FFFF
        switch cpuType {
        case 12:  // CPU_TYPE_ARM
            switch sub {
            case 6: return "armv6"
            case 9: return "armv7"
            case 10: return "armv7f"
            case 11: return "armv7s"
            case 12: return "armv7k"
            case 14: return "armv6m"
            case 15: return "armv7m"
            case 16: return "armv7em"
            default: return "arm"
            }
        case 0x0100_000C:  // CPU_TYPE_ARM64
            return sub == 2 ? "arm64e" : "arm64"
        case 0x0200_000C:  // CPU_TYPE_ARM64_32
            return "arm64_32"
        case 7: return "i386"
        case 0x0100_0007: return "x86_64"
        default: return "cputype \(cpuType)"
        }
    }

    private static func readUInt32BE(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    private static func readUInt32LE(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 1]) << 8
            | UInt32(bytes[offset])
    }
}
