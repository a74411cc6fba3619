/// An 8-bit RGB raster (3 bytes per pixel, rows top to bottom, no padding).
public struct RGBImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// `width * height * 3` bytes, R G B per pixel.
    public var pixels: [UInt8]

    /// A 24-bit colour.
    public struct Color: Sendable, Equatable, Hashable {
        public var red: UInt8
        public var green: UInt8
        public var blue: UInt8

        public init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
        }

        public static let black = Color(red: 0, green: 0, blue: 0)
        public static let white = Color(red: 255, green: 255, blue: 255)
    }

    /// Creates an image filled with one colour.
    public init(width: Int, height: Int, fill: Color = .black) {
        precondition(width > 0 && height > 0, "an image needs a positive size")
        self.width = width
        self.height = height
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        if fill != .black {
            for index in stride(from: 0, to: pixels.count, by: 3) {
                pixels[index] = fill.red
                pixels[index + 1] = fill.green
                pixels[index + 2] = fill.blue
            }
        }
        self.pixels = pixels
    }

    /// Wraps existing RGB bytes; returns nil when the byte count does not match the size.
    public init?(width: Int, height: Int, pixels: [UInt8]) {
        guard width > 0, height > 0, pixels.count == width * height * 3 else { return nil }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The colour at (x, y); (0, 0) is the top-left corner.
    public func color(x: Int, y: Int) -> Color {
        let index = (y * width + x) * 3
        return Color(red: pixels[index], green: pixels[index + 1], blue: pixels[index + 2])
    }

    /// Fills a rectangle, clipped to the image.
    public mutating func fill(x: Int, y: Int, width rectWidth: Int, height rectHeight: Int, color: Color) {
        let minX = max(0, x)
        let maxX = min(width, x + rectWidth)
        let minY = max(0, y)
        let maxY = min(height, y + rectHeight)
        guard minX < maxX, minY < maxY else { return }
        for row in minY..<maxY {
            var index = (row * width + minX) * 3
            for _ in minX..<maxX {
                pixels[index] = color.red
                pixels[index + 1] = color.green
                pixels[index + 2] = color.blue
                index += 3
            }
        }
    }
}
