import CPNG
import Foundation

/// PNG through libpng's "simplified" API, which reports errors through return values instead of
/// longjmp (longjmp across Swift frames is undefined behaviour).
enum PNGCodec {
    // PNG_IMAGE_VERSION and PNG_FORMAT_RGB from png.h; spelled out because the Swift importer does
    // not carry macro-of-macro definitions reliably.
    private static let imageVersion: UInt32 = 1
    private static let formatRGB: UInt32 = 0x02
    private static let errorFlag: Int32 = 2

    static func encode(_ image: RGBImage) throws -> Data {
        var descriptor = png_image()
        descriptor.version = imageVersion
        descriptor.width = UInt32(image.width)
        descriptor.height = UInt32(image.height)
        descriptor.format = formatRGB
        let rowStride = Int32(image.width * 3)
        // Flat screen contents compress well; the bound only has to cover incompressible data.
        var capacity = image.pixels.count + image.pixels.count / 50 + 65_536
        var output = [UInt8](repeating: 0, count: capacity)
        let status = image.pixels.withUnsafeBytes { pixels in
            output.withUnsafeMutableBytes { out in
                png_image_write_to_memory(
                    &descriptor, out.baseAddress, &capacity, 0, pixels.baseAddress,
                    rowStride, nil)
            }
        }
        defer { png_image_free(&descriptor) }
        guard status != 0 else {
            throw ImageCodecError(operation: "PNG encoding", reason: message(of: descriptor))
        }
        return Data(output[0..<capacity])
    }

    static func decode(_ data: Data) throws -> RGBImage {
        var descriptor = png_image()
        descriptor.version = imageVersion
        let began = data.withUnsafeBytes { bytes in
            png_image_begin_read_from_memory(&descriptor, bytes.baseAddress, bytes.count)
        }
        guard began != 0 else {
            throw ImageCodecError(operation: "PNG decoding", reason: message(of: descriptor))
        }
        defer { png_image_free(&descriptor) }
        descriptor.format = formatRGB
        let width = Int(descriptor.width)
        let height = Int(descriptor.height)
        if let problem = ImageCodec.sizeProblem(width: width, height: height) {
            throw ImageCodecError(operation: "PNG decoding", reason: problem)
        }
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        let finished = pixels.withUnsafeMutableBytes { out in
            png_image_finish_read(&descriptor, nil, out.baseAddress, Int32(width * 3), nil)
        }
        guard finished != 0, let image = RGBImage(width: width, height: height, pixels: pixels) else {
            throw ImageCodecError(operation: "PNG decoding", reason: message(of: descriptor))
        }
        return image
    }

    private static func message(of descriptor: png_image) -> String {
        var copy = descriptor.message
        return withUnsafeBytes(of: &copy) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
