import CTIFF
import Foundation

/// Uncompressed big-endian RGB TIFF through libtiff over an in-memory buffer.
///
/// Big-endian on purpose: `idevicescreenshot` names a file `.tiff` only when the data starts with
/// `MM\0*` (libimobiledevice 1.3.0 tools/idevicescreenshot.c), which is what old iOS devices sent.
enum TIFFCodec {
    // Tag and value numbers from tiff.h (TIFF 6.0 specification).
    private static let tagImageWidth: UInt32 = 256
    private static let tagImageLength: UInt32 = 257
    private static let tagBitsPerSample: UInt32 = 258
    private static let tagCompression: UInt32 = 259
    private static let tagPhotometric: UInt32 = 262
    private static let tagSamplesPerPixel: UInt32 = 277
    private static let tagRowsPerStrip: UInt32 = 278
    private static let tagPlanarConfig: UInt32 = 284
    private static let orientationTopLeft: Int32 = 1

    static func encode(_ image: RGBImage) throws -> Data {
        ctiff_silence()
        var memory = ctiff_memory()
        defer { ctiff_memory_free(&memory) }
        guard let tiff = ctiff_open_memory(&memory, "wb") else {
            throw ImageCodecError(
                operation: "TIFF encoding", reason: "libtiff could not open a memory buffer")
        }
        var ok =
            ctiff_set_u32(tiff, tagImageWidth, UInt32(image.width)) != 0
            && ctiff_set_u32(tiff, tagImageLength, UInt32(image.height)) != 0
            && ctiff_set_u16(tiff, tagBitsPerSample, 8) != 0
            && ctiff_set_u16(tiff, tagSamplesPerPixel, 3) != 0
            && ctiff_set_u16(tiff, tagCompression, 1) != 0
            && ctiff_set_u16(tiff, tagPhotometric, 2) != 0
            && ctiff_set_u16(tiff, tagPlanarConfig, 1) != 0
            && ctiff_set_u32(tiff, tagRowsPerStrip, UInt32(max(1, 65_536 / (image.width * 3)))) != 0
        if ok {
            let rowBytes = image.width * 3
            var row = [UInt8](repeating: 0, count: rowBytes)
            for y in 0..<image.height where ok {
                row.replaceSubrange(0..<rowBytes, with: image.pixels[(y * rowBytes)..<((y + 1) * rowBytes)])
                ok = row.withUnsafeMutableBytes { TIFFWriteScanline(tiff, $0.baseAddress, UInt32(y), 0) } == 1
            }
        }
        TIFFClose(tiff)
        guard ok, let base = memory.data else {
            throw ImageCodecError(
                operation: "TIFF encoding", reason: "libtiff rejected the image fields or rows")
        }
        return Data(bytes: base, count: Int(memory.size))
    }

    static func decode(_ data: Data) throws -> RGBImage {
        ctiff_silence()
        var memory = ctiff_memory()
        let count = data.count
        guard let base = malloc(max(count, 1))?.assumingMemoryBound(to: UInt8.self) else {
            throw ImageCodecError(operation: "TIFF decoding", reason: "out of memory")
        }
        data.copyBytes(to: base, count: count)
        memory.data = base
        memory.size = UInt64(count)
        memory.capacity = UInt64(count)
        defer { ctiff_memory_free(&memory) }
        guard let tiff = ctiff_open_memory(&memory, "r") else {
            throw ImageCodecError(operation: "TIFF decoding", reason: "not a readable TIFF header")
        }
        defer { TIFFClose(tiff) }
        var width: UInt32 = 0
        var height: UInt32 = 0
        guard ctiff_get_u32(tiff, tagImageWidth, &width) != 0,
            ctiff_get_u32(tiff, tagImageLength, &height) != 0
        else {
            throw ImageCodecError(operation: "TIFF decoding", reason: "missing image dimensions")
        }
        if let problem = ImageCodec.sizeProblem(width: Int(width), height: Int(height)) {
            throw ImageCodecError(operation: "TIFF decoding", reason: problem)
        }
        var raster = [UInt32](repeating: 0, count: Int(width) * Int(height))
        let ok = raster.withUnsafeMutableBufferPointer {
            TIFFReadRGBAImageOriented(tiff, width, height, $0.baseAddress, orientationTopLeft, 0)
        }
        guard ok != 0 else {
            throw ImageCodecError(operation: "TIFF decoding", reason: "libtiff could not read the raster")
        }
        // TIFFReadRGBAImage packs ABGR: red in the lowest byte.
        var pixels = [UInt8](repeating: 0, count: raster.count * 3)
        for (index, value) in raster.enumerated() {
            pixels[index * 3] = UInt8(truncatingIfNeeded: value)
            pixels[index * 3 + 1] = UInt8(truncatingIfNeeded: value >> 8)
            pixels[index * 3 + 2] = UInt8(truncatingIfNeeded: value >> 16)
        }
        return RGBImage(width: Int(width), height: Int(height), pixels: pixels)!
    }
}
