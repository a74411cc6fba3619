import Foundation

/// Encodes and decodes PNG and TIFF screenshots (libpng, libtiff).
public enum ImageCodec {
    /// The widest or tallest image decoded. Screens are far smaller (an iPad's is at most 2732×2048,
    /// a 6K display's 6016×3384); a header declaring more is refused before any pixel is allocated.
    public static let maximumSide = 8192
    /// The most pixels an image decoded may have (120 MB of RGB): a header is read before its pixels,
    /// so a few hundred bytes declaring a million by a million pixels cost nothing.
    public static let maximumPixels = 40_000_000

    /// Why an image of this size is not decoded, or nil when it may be.
    static func sizeProblem(width: Int, height: Int) -> String? {
        guard width > 0, height > 0 else { return "the image declares \(width)×\(height) pixels" }
        guard width <= maximumSide, height <= maximumSide, width * height <= maximumPixels else {
            return "the image declares \(width)×\(height) pixels, more than the \(maximumSide) a side and "
                + "\(maximumPixels / 1_000_000) million in all a screenshot can have"
        }
        return nil
    }

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
