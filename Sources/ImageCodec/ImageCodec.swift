import Foundation

/// Encodes and decodes PNG and TIFF screenshots (libpng, libtiff).
public enum ImageCodec {
    /// Encodes an image in the given format.
    public static func encode(_ image: RGBImage, as format: ImageFormat) throws -> Data {
        switch format {
        case .png: return try PNGCodec.encode(image)
        case .tiff: return try TIFFCodec.encode(image)
        }
    }

    /// Decodes PNG or TIFF data (format sniffed from the header).
    public static func decode(_ data: Data) throws -> RGBImage {
        switch ImageFormat.detect(data) {
        case .png: return try PNGCodec.decode(data)
        case .tiff: return try TIFFCodec.decode(data)
        case nil:
            throw ImageCodecError(operation: "image decoding", reason: "the data is neither PNG nor TIFF")
        }
    }

    /// Returns PNG data for a PNG or TIFF screenshot (old iOS versions deliver TIFF).
    public static func pngData(fromScreenshot data: Data) throws -> Data {
        if ImageFormat.detect(data) == .png { return data }
        return try PNGCodec.encode(decode(data))
    }
}
