import Testing

@testable import MobileDevice

/// Synthetic Mach-O headers, laid out as <mach-o/fat.h> and <mach-o/loader.h> define them.
enum MachOFixtures {
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] { bigEndian(value).reversed() }

    /// A thin 64-bit (or 32-bit) little-endian header as an ARM binary starts.
    static func thin(cpuType: UInt32, subtype: UInt32, is64: Bool = true) -> [UInt8] {
        let magic: UInt32 = is64 ? 0xFEED_FACF : 0xFEED_FACE
        return littleEndian(magic) + littleEndian(cpuType) + littleEndian(subtype) + littleEndian(2)
            + [UInt8](repeating: 0, count: 16)
    }

    /// A fat header listing (cputype, subtype) slices, big-endian, 20-byte fat_arch entries.
    static func fat(_ slices: [(UInt32, UInt32)]) -> [UInt8] {
        var bytes = bigEndian(0xCAFE_BABE) + bigEndian(UInt32(slices.count))
        for (index, slice) in slices.enumerated() {
            bytes +=
                bigEndian(slice.0) + bigEndian(slice.1) + bigEndian(UInt32(4096 * (index + 1)))
                + bigEndian(1000) + bigEndian(14)
        }
        return bytes
    }

    static let arm: UInt32 = 12
    static let arm64: UInt32 = 0x0100_000C
}

@Suite struct MachOSlicesTests {
    @Test func fatBinaryListsEverySlice() throws {
        let header = MachOFixtures.fat([(MachOFixtures.arm, 9), (MachOFixtures.arm64, 0)])
        #expect(try MachOSlices.architectures(inHeader: header) == ["armv7", "arm64"])
    }

    @Test func thinArm64AndArmv7() throws {
        #expect(
            try MachOSlices.architectures(
                inHeader: MachOFixtures.thin(cpuType: MachOFixtures.arm64, subtype: 0)) == ["arm64"])
        let armv7 = MachOFixtures.thin(cpuType: MachOFixtures.arm, subtype: 9, is64: false)
        #expect(try MachOSlices.architectures(inHeader: armv7) == ["armv7"])
    }

    @Test func arm64eIgnoresCapabilityBits() throws {
        let header = MachOFixtures.thin(cpuType: MachOFixtures.arm64, subtype: 0x8000_0002)
        #expect(try MachOSlices.architectures(inHeader: header) == ["arm64e"])
    }

    @Test func javaClassFileIsNotMachO() {
        // Java class files also start with 0xCAFEBABE, followed by a version ≥ 45.
        let header = MachOFixtures.bigEndian(0xCAFE_BABE) + MachOFixtures.bigEndian(52) + [0, 0, 0, 0]
        #expect(throws: MachOSlices.Failure.notMachO) { try MachOSlices.architectures(inHeader: header) }
    }

    @Test func truncatedFatHeaderIsReported() {
        let header = Array(MachOFixtures.fat([(MachOFixtures.arm, 9), (MachOFixtures.arm64, 0)]).prefix(30))
        #expect(throws: MachOSlices.Failure.truncated) { try MachOSlices.architectures(inHeader: header) }
    }

    @Test func scriptIsNotMachO() {
        #expect(throws: MachOSlices.Failure.notMachO) {
            try MachOSlices.architectures(inHeader: Array("#!/bin/sh\necho hi\n".utf8))
        }
    }

    @Test func compatibilityFollowsTheCPUAndIOSVersion() {
        // The iPad 2 (armv7) cannot run an arm64-only build.
        #expect(
            !ArchitectureCompatibility.canRun(slices: ["arm64"], deviceArchitecture: "armv7", iOSMajor: 9))
        #expect(
            ArchitectureCompatibility.canRun(
                slices: ["armv7", "arm64"], deviceArchitecture: "armv7", iOSMajor: 9))
        // 64-bit devices ran 32-bit apps until iOS 11.
        #expect(
            ArchitectureCompatibility.canRun(slices: ["armv7"], deviceArchitecture: "arm64", iOSMajor: 10))
        #expect(
            !ArchitectureCompatibility.canRun(slices: ["armv7"], deviceArchitecture: "arm64", iOSMajor: 15))
        #expect(
            ArchitectureCompatibility.canRun(slices: ["arm64"], deviceArchitecture: "arm64e", iOSMajor: 17))
    }

    @Test func iosVersionsCompareNumerically() {
        #expect(IOSVersion("9.3.5") < IOSVersion("15.8"))
        #expect(IOSVersion("15.10") > IOSVersion("15.8.3"))
        #expect(IOSVersion("15.8.3").majorMinor == "15.8")
        #expect(IOSVersion("17.0") == IOSVersion("17.0.0"))
    }
}
