import ArgumentParser
import Foundation
import ImageCodec

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `hadeploy-bench compare-screenshots`: the perceptual comparison a deploy runs for each device
/// (BENCHMARKS.md §12), on two 2048×1536 dashboard screenshots (a card added, soft edges moved by a
/// pixel) or on two PNG files. Decoding is outside the measured time; peak memory is the process's.
struct ScreenshotCompareBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare-screenshots",
        abstract:
            "Time the screenshot comparison (YIQ, threshold 0.1, anti-aliasing forgiven) and its memory.")

    @Option(help: "The baseline PNG (default: a generated 2048×1536 dashboard).")
    var before: String?

    @Option(help: "The new PNG (default: the generated dashboard with a card added).")
    var after: String?

    @Option(help: "How many comparisons to time.")
    var runs: Int = 20

    @Option(
        help: "Write before.png, after.png and diff.png here (to compare with pixelmatch on the same files).")
    var write: String?

    func run() throws {
        guard runs > 0 else { throw BenchFailure("--runs must be at least 1") }
        let (first, second): (RGBImage, RGBImage)
        switch (before, after) {
        case (let before?, let after?):
            first = try ImageCodec.decode(try Data(contentsOf: URL(fileURLWithPath: before)))
            second = try ImageCodec.decode(try Data(contentsOf: URL(fileURLWithPath: after)))
        case (nil, nil):
            first = Self.dashboard(cards: 11, shift: 0)
            second = Self.dashboard(cards: 12, shift: 1)
        default:
            throw BenchFailure("give both --before and --after, or neither")
        }
        let loaded = Self.peakResidentKiB()
        let comparison = PixelComparison()
        var samples: [Double] = []
        var last: PixelDifference?
        for _ in 0..<runs {
            let clock = ContinuousClock()
            let start = clock.now
            guard case .compared(let difference) = comparison.compare(first, second) else {
                throw BenchFailure("the two screenshots differ in size")
            }
            samples.append(Timing.milliseconds(clock.now - start))
            last = difference
        }
        guard let difference = last else { return }
        let identical = ContinuousClock().measure { _ = comparison.compare(first, first) }
        let summary = Summary(samples)
        print("BENCH screens: \(first.width)×\(first.height), \(difference.totalPixels) pixels")
        print(
            "BENCH compare: min \(Timing.fixed(summary.min)) ms, median \(Timing.fixed(summary.median)) ms, "
                + "max \(Timing.fixed(summary.max)) ms over \(summary.n) runs")
        print("BENCH compare identical: \(Timing.fixed(Timing.milliseconds(identical))) ms")
        print(
            "BENCH result: \(difference.differingPixels) differing, \(difference.antialiasedPixels) anti-aliased, "
                + "\(String(format: "%.2f", difference.matchPercentage)) % alike")
        print(
            "BENCH peak RSS: \(Self.peakResidentKiB() / 1024) MiB (\(loaded / 1024) MiB with both images "
                + "decoded, before the first comparison)")
        if let write {
            let folder = URL(fileURLWithPath: write)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (name, image) in [("before", first), ("after", second), ("diff", difference.diff)] {
                try ImageCodec.encode(image, as: .png).write(to: folder.appendingPathComponent("\(name).png"))
            }
            print("BENCH wrote before.png, after.png, diff.png to \(folder.path)")
        }
    }

    /// A dashboard as the app draws it on a 2048×1536 iPad: a header, cards in three columns with a
    /// title band and text-like rows whose edges are anti-aliased; `shift` moves every row's soft
    /// edge by that many pixels (a font rendered a pixel to the side).
    static func dashboard(cards: Int, shift: Int) -> RGBImage {
        let width = 2048
        let height = 1536
        var image = RGBImage(
            width: width, height: height, fill: RGBImage.Color(red: 250, green: 250, blue: 250))
        image.fill(x: 0, y: 0, width: width, height: 96, color: RGBImage.Color(red: 3, green: 169, blue: 244))
        let columnWidth = (width - 4 * 32) / 3
        for index in 0..<cards {
            let x = 32 + (index % 3) * (columnWidth + 32)
            let y = 128 + (index / 3) * 340
            image.fill(
                x: x, y: y, width: columnWidth, height: 308,
                color: RGBImage.Color(red: 176, green: 190, blue: 197))
            image.fill(x: x + 2, y: y + 2, width: columnWidth - 4, height: 304, color: .white)
            image.fill(
                x: x + 2, y: y + 2, width: columnWidth - 4, height: 56,
                color: RGBImage.Color(red: 3, green: 169, blue: 244))
            for row in 0..<5 {
                let rowY = y + 80 + row * 44
                let length = 200 + (index * 37 + row * 53) % 300
                image.fill(
                    x: x + 24, y: rowY, width: length + shift, height: 20,
                    color: RGBImage.Color(red: 33, green: 33, blue: 33))
                image.fill(
                    x: x + 24 + length + shift, y: rowY, width: 1, height: 20,
                    color: RGBImage.Color(red: 144, green: 144, blue: 144))
            }
        }
        return image
    }

    /// The process's peak resident memory so far (getrusage: KiB on Linux, bytes on macOS).
    static func peakResidentKiB() -> Int {
        var usage = rusage()
        #if canImport(Darwin)
            getrusage(RUSAGE_SELF, &usage)
            return Int(usage.ru_maxrss) / 1024
        #else
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return Int(usage.ru_maxrss)
        #endif
    }
}
