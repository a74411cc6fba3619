import Foundation
import ImageCodec
import Testing

/// The perceptual comparison on images built pixel by pixel, so every count is known in advance.
struct PixelComparisonTests {
    static let page = RGBImage.Color(red: 0xFA, green: 0xFA, blue: 0xFA)
    static let card = RGBImage.Color(red: 0x03, green: 0xA9, blue: 0xF4)

    /// A black area left of `edge`, white right of it, and one mid-grey column at `edge`: the
    /// anti-aliased border of a glyph or a card as a renderer draws it.
    static func softEdge(at edge: Int, width: Int = 40, height: Int = 30) -> RGBImage {
        var image = RGBImage(width: width, height: height, fill: .white)
        image.fill(x: 0, y: 0, width: edge, height: height, color: .black)
        image.fill(
            x: edge, y: 0, width: 1, height: height, color: RGBImage.Color(red: 128, green: 128, blue: 128))
        return image
    }

    func compared(_ a: RGBImage, _ b: RGBImage, _ comparison: PixelComparison = PixelComparison()) throws
        -> PixelDifference
    {
        guard case .compared(let difference) = comparison.compare(a, b) else {
            Issue.record("the images were not compared")
            throw CancellationError()
        }
        return difference
    }

    @Test func identicalScreenshotsMatchCompletely() throws {
        var image = RGBImage(width: 64, height: 48, fill: Self.page)
        image.fill(x: 8, y: 8, width: 20, height: 10, color: Self.card)
        let difference = try compared(image, image)
        #expect(difference.differingPixels == 0 && difference.antialiasedPixels == 0)
        #expect(difference.matchPercentage == 100)
        // Unchanged pixels are a faded grey copy: the card is still faintly there, nothing is red.
        #expect(difference.diff.color(x: 10, y: 10) != difference.diff.color(x: 40, y: 40))
        #expect(difference.diff.color(x: 10, y: 10) != PixelComparison.DiffColors.darker)
    }

    @Test func anAntialiasedEdgeMovedByOnePixelIsNotAChange() throws {
        let before = Self.softEdge(at: 20)
        let after = Self.softEdge(at: 21)
        let difference = try compared(before, after)
        // Columns 20 (grey → black) and 21 (white → grey) differ, every pixel forgiven.
        #expect(difference.differingPixels == 0)
        #expect(difference.antialiasedPixels == 2 * 30)
        #expect(difference.diff.color(x: 20, y: 15) == PixelComparison.DiffColors.antialiased)
        // Counting anti-aliasing (pixelmatch's includeAA) sees both columns.
        let strict = try compared(before, after, PixelComparison(countAntialiasing: true))
        #expect(strict.differingPixels == 2 * 30)
    }

    @Test func aCardThatAppearedIsCountedPixelForPixel() throws {
        var before = RGBImage(width: 200, height: 100, fill: Self.page)
        before.fill(x: 10, y: 10, width: 80, height: 30, color: Self.card)
        var after = before
        after.fill(x: 110, y: 50, width: 60, height: 40, color: Self.card)
        let difference = try compared(before, after)
        #expect(difference.differingPixels == 60 * 40)
        #expect(difference.antialiasedPixels == 0)
        #expect(abs(difference.matchPercentage - 100 * (1 - 2400.0 / 20_000)) < 1e-9)
        #expect(difference.diff.color(x: 140, y: 70) == PixelComparison.DiffColors.darker)
        // The other way round the new pixels are lighter: another colour, the same count.
        let reverse = try compared(after, before)
        #expect(reverse.differingPixels == 60 * 40)
        #expect(reverse.diff.color(x: 140, y: 70) == PixelComparison.DiffColors.lighter)
    }

    @Test func theThresholdDecidesWhatASmallColourShiftIs() throws {
        let before = RGBImage(width: 10, height: 10, fill: .white)
        let slightly = RGBImage(width: 10, height: 10, fill: Self.page)
        let grey = RGBImage(width: 10, height: 10, fill: RGBImage.Color(red: 200, green: 200, blue: 200))
        #expect(try compared(before, slightly).differingPixels == 0, "a 2 % brightness shift is not a change")
        #expect(try compared(before, grey).differingPixels == 100)
        #expect(try compared(before, slightly, PixelComparison(threshold: 0)).differingPixels == 100)
        #expect(try compared(before, grey, PixelComparison(threshold: 1)).differingPixels == 0)
    }

    @Test func screenshotsOfDifferentSizesAreDifferentAndSaySo() {
        let portrait = RGBImage(width: 30, height: 40)
        let landscape = RGBImage(width: 40, height: 30)
        guard case .differentSize(let reason) = PixelComparison().compare(portrait, landscape) else {
            Issue.record("different sizes were compared pixel by pixel")
            return
        }
        #expect(reason.contains("30×40") && reason.contains("40×30"), "\(reason)")
    }

    @Test func theDiffImageRoundTripsThroughThePNGCodec() throws {
        var before = RGBImage(width: 32, height: 32, fill: Self.page)
        var after = before
        after.fill(x: 4, y: 4, width: 8, height: 8, color: .black)
        before.fill(x: 20, y: 20, width: 4, height: 4, color: Self.card)
        let difference = try compared(before, after)
        let png = try ImageCodec.encode(difference.diff, as: .png)
        #expect(ImageFormat.detect(png) == .png)
        #expect(try ImageCodec.decode(png) == difference.diff)
        #expect(difference.differingPixels == 64 + 16)
    }
}
