/// A perceptual per-pixel comparison of two screenshots, after the method pixelmatch documents: the
/// colour distance is measured in YIQ (brightness counts about twice as much as hue), a pixel counts
/// only when its distance passes the threshold, and a pixel on an anti-aliased edge (a neighbour
/// darker and one brighter, each sitting in a flat area in both images) is forgiven, so a font
/// rendered a pixel to the side is not a change while a card that appeared is.
public struct PixelComparison: Sendable {
    /// 0 (exact) to 1 (anything goes); pixelmatch's default is 0.1.
    public var threshold: Double
    /// Counts anti-aliased pixels as differences too.
    public var countAntialiasing: Bool

    /// The largest possible YIQ distance (black against white), the scale the threshold applies to.
    public static let maximumDelta = 35_215.0

    public init(threshold: Double = 0.1, countAntialiasing: Bool = false) {
        self.threshold = min(max(threshold, 0), 1)
        self.countAntialiasing = countAntialiasing
    }

    /// What a comparison found.
    public enum Outcome: Sendable {
        case compared(PixelDifference)
        /// Two screen sizes cannot be compared pixel by pixel: the reason says which.
        case differentSize(reason: String)
    }

    public func compare(_ before: RGBImage, _ after: RGBImage) -> Outcome {
        guard before.width == after.width, before.height == after.height else {
            return .differentSize(
                reason: "the screenshots differ in size (\(before.width)×\(before.height) before, "
                    + "\(after.width)×\(after.height) now)")
        }
        let width = before.width
        let height = before.height
        var diff = [UInt8](repeating: 0, count: before.pixels.count)
        var differing = 0
        var antialiased = 0
        let limit = Self.maximumDelta * threshold * threshold
        let countAntialiasing = countAntialiasing
        before.pixels.withUnsafeBufferPointer { first in
            after.pixels.withUnsafeBufferPointer { second in
                diff.withUnsafeMutableBufferPointer { out in
                    let a = Raster(bytes: first, width: width, height: height)
                    let b = Raster(bytes: second, width: width, height: height)
                    for y in 0..<height {
                        for x in 0..<width {
                            let offset = (y * width + x) * 3
                            let same =
                                first[offset] == second[offset] && first[offset + 1] == second[offset + 1]
                                && first[offset + 2] == second[offset + 2]
                            if !same {
                                let delta = Self.delta(a, offset, b, offset)
                                if abs(delta) > limit {
                                    if !countAntialiasing
                                        && (a.isAntialiased(x: x, y: y, other: b)
                                            || b.isAntialiased(x: x, y: y, other: a))
                                    {
                                        antialiased += 1
                                        Self.put(DiffColors.antialiased, out, offset)
                                    } else {
                                        differing += 1
                                        // Red where the new one is darker, blue where it is lighter.
                                        Self.put(
                                            delta > 0 ? DiffColors.darker : DiffColors.lighter, out, offset)
                                    }
                                    continue
                                }
                            }
                            Self.putFaded(first, offset, out)
                        }
                    }
                }
            }
        }
        return .compared(
            PixelDifference(
                width: width, height: height, differingPixels: differing, antialiasedPixels: antialiased,
                diff: RGBImage(width: width, height: height, pixels: diff)!))
    }

    /// The colours of the diff image (pixelmatch's conventions: red changed, yellow forgiven).
    public enum DiffColors {
        public static let darker = RGBImage.Color(red: 255, green: 0, blue: 0)
        public static let lighter = RGBImage.Color(red: 0, green: 90, blue: 255)
        public static let antialiased = RGBImage.Color(red: 255, green: 255, blue: 0)
    }

    // MARK: colour space

    /// Brightness, in-phase and quadrature components (NTSC YIQ, the coefficients from Kotsarenko and
    /// Ramos, "Measuring perceived color difference using YIQ NTSC transmission color space", 2010).
    @inline(__always) static func brightness(_ r: Double, _ g: Double, _ b: Double) -> Double {
        r * 0.298_895_31 + g * 0.586_622_47 + b * 0.114_482_23
    }

    @inline(__always) static func inPhase(_ r: Double, _ g: Double, _ b: Double) -> Double {
        r * 0.595_977_99 - g * 0.274_176_10 - b * 0.321_801_89
    }

    @inline(__always) static func quadrature(_ r: Double, _ g: Double, _ b: Double) -> Double {
        r * 0.211_470_17 - g * 0.522_617_11 + b * 0.311_146_94
    }

    /// The weighted YIQ distance of two pixels; positive when the second is darker.
    @inline(__always) static func delta(_ a: Raster, _ i: Int, _ b: Raster, _ j: Int) -> Double {
        let (r1, g1, b1) = a.rgb(i)
        let (r2, g2, b2) = b.rgb(j)
        let y = brightness(r1, g1, b1) - brightness(r2, g2, b2)
        let p = inPhase(r1, g1, b1) - inPhase(r2, g2, b2)
        let q = quadrature(r1, g1, b1) - quadrature(r2, g2, b2)
        let distance = 0.5053 * y * y + 0.299 * p * p + 0.1957 * q * q
        return y > 0 ? distance : -distance
    }

    @inline(__always) static func put(
        _ color: RGBImage.Color, _ out: UnsafeMutableBufferPointer<UInt8>, _ offset: Int
    ) {
        out[offset] = color.red
        out[offset + 1] = color.green
        out[offset + 2] = color.blue
    }

    /// An unchanged pixel: the original in grey, faded towards white so the changes stand out.
    @inline(__always) static func putFaded(
        _ source: UnsafeBufferPointer<UInt8>, _ offset: Int, _ out: UnsafeMutableBufferPointer<UInt8>
    ) {
        let luma = brightness(Double(source[offset]), Double(source[offset + 1]), Double(source[offset + 2]))
        let grey = UInt8(255 - (255 - luma) * 0.1)
        out[offset] = grey
        out[offset + 1] = grey
        out[offset + 2] = grey
    }
}

/// The result of comparing two screenshots of the same size.
public struct PixelDifference: Sendable {
    public var width: Int
    public var height: Int
    /// Pixels whose colour moved past the threshold, anti-aliasing not counted.
    public var differingPixels: Int
    /// Pixels that differ but sit on an anti-aliased edge (yellow in the diff).
    public var antialiasedPixels: Int
    /// The changes drawn over a faded copy of the first image.
    public var diff: RGBImage

    public var totalPixels: Int { width * height }

    /// How much of the screen is unchanged, 0 to 100.
    public var matchPercentage: Double {
        100 * Double(totalPixels - differingPixels) / Double(totalPixels)
    }
}

/// An RGB raster read without bounds checks or copies (the comparison's inner loop).
struct Raster {
    let bytes: UnsafeBufferPointer<UInt8>
    let width: Int
    let height: Int

    @inline(__always) func rgb(_ offset: Int) -> (Double, Double, Double) {
        (Double(bytes[offset]), Double(bytes[offset + 1]), Double(bytes[offset + 2]))
    }

    @inline(__always) func sameColor(_ i: Int, _ j: Int) -> Bool {
        bytes[i] == bytes[j] && bytes[i + 1] == bytes[j + 1] && bytes[i + 2] == bytes[j + 2]
    }

    /// Whether (x, y) looks like an anti-aliased edge pixel: among its eight neighbours no more than
    /// two share its colour, at least one is darker and one brighter, and the darkest or the
    /// brightest of them sits in a flat area (three identical neighbours) in both images — a smooth
    /// step between two solid colours rather than a detail of its own.
    func isAntialiased(x: Int, y: Int, other: Raster) -> Bool {
        let around = Neighbourhood(x: x, y: y, in: self)
        var equal = around.equalAtStart
        // own brightness minus a neighbour's: the most negative is the brightest neighbour.
        var towardsBright = 0.0
        var towardsDark = 0.0
        var brightestAt = (0, 0)
        var darkestAt = (0, 0)
        let (r, g, b) = rgb(around.center)
        let own = PixelComparison.brightness(r, g, b)
        for ny in around.rows {
            for nx in around.columns where nx != x || ny != y {
                let (nr, ng, nb) = rgb((ny * width + nx) * 3)
                let step = own - PixelComparison.brightness(nr, ng, nb)
                if step == 0 {
                    equal += 1
                    if equal > 2 { return false }
                } else if step < towardsBright {
                    towardsBright = step
                    brightestAt = (nx, ny)
                } else if step > towardsDark {
                    towardsDark = step
                    darkestAt = (nx, ny)
                }
            }
        }
        guard towardsBright != 0, towardsDark != 0 else { return false }
        return (isFlat(at: brightestAt) && other.isFlat(at: brightestAt))
            || (isFlat(at: darkestAt) && other.isFlat(at: darkestAt))
    }

    /// Whether at least three neighbours of (x, y) have exactly its colour (edges count as one).
    func isFlat(at point: (Int, Int)) -> Bool {
        let (x, y) = point
        let around = Neighbourhood(x: x, y: y, in: self)
        var equal = around.equalAtStart
        for ny in around.rows {
            for nx in around.columns where nx != x || ny != y {
                if sameColor(around.center, (ny * width + nx) * 3) {
                    equal += 1
                    if equal > 2 { return true }
                }
            }
        }
        return false
    }
}

/// The 3×3 block around a pixel, clipped to the image.
struct Neighbourhood {
    let columns: ClosedRange<Int>
    let rows: ClosedRange<Int>
    /// The pixel's byte offset.
    let center: Int
    /// A pixel on the image's border starts with one neighbour counted as equal (pixelmatch's rule:
    /// what lies outside the image is taken as the pixel's own colour, once).
    let equalAtStart: Int

    @inline(__always) init(x: Int, y: Int, in raster: Raster) {
        columns = max(x - 1, 0)...min(x + 1, raster.width - 1)
        rows = max(y - 1, 0)...min(y + 1, raster.height - 1)
        center = (y * raster.width + x) * 3
        equalAtStart =
            x == columns.lowerBound || x == columns.upperBound || y == rows.lowerBound || y == rows.upperBound
            ? 1 : 0
    }
}
