import Foundation
import ImageCodec
import Testing

/// Images whose header declares more pixels than any screen has: refused with a reason, before a
/// pixel is allocated, instead of the process aborting on a terabyte allocation.
struct HostileImageTests {
    /// The standard CRC-32 of PNG chunks (ISO 3309), bit by bit.
    static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// A real small PNG whose IHDR is rewritten to declare `width`×`height` (its CRC made right, so
    /// libpng reads the header as valid): a few hundred bytes.
    static func declaring(width: UInt32, height: UInt32) throws -> Data {
        var png = [UInt8](try ImageCodec.encode(RGBImage(width: 4, height: 4, fill: .white), as: .png))
        // Signature (8), IHDR length (4), "IHDR" (4), then width and height, big-endian.
        #expect(Array(png[12..<16]) == Array("IHDR".utf8))
        for (offset, value) in [(16, width), (20, height)] {
            for index in 0..<4 { png[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
        }
        let crc = crc32(png[12..<29])
        for index in 0..<4 { png[29 + index] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * index)) }
        return Data(png)
    }

    @Test func aSmallPNGDeclaringAMillionByAMillionPixelsIsRefusedNotDecoded() throws {
        let bomb = try Self.declaring(width: 1_000_000, height: 1_000_000)
        #expect(bomb.count < 1000)
        #expect {
            try ImageCodec.decode(bomb)
        } throws: { error in
            "\(error)".contains("1000000×1000000 pixels")
        }
        // Within one side's limit but too many pixels in all: refused too.
        #expect(throws: ImageCodecError.self) {
            try ImageCodec.decode(try Self.declaring(width: 8192, height: 8192))
        }
    }

    @Test func anIPadSizedHeaderIsStillDecodedAsFarAsItsDataGoes() throws {
        // 2732×2048 is within the limits: decoding is attempted, and fails only on the missing rows.
        #expect {
            try ImageCodec.decode(try Self.declaring(width: 2732, height: 2048))
        } throws: { error in
            !"\(error)".contains("pixels, more than")
        }
        let real = try ImageCodec.encode(RGBImage(width: 2732, height: 2048, fill: .white), as: .png)
        #expect(try ImageCodec.decode(real).width == 2732)
    }
}
