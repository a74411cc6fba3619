import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import ImageCodec
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployKit
@testable import HADeployReporting
@testable import Versioning

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Screenshots against each device's baseline, and against each other, on real PNG files in a
/// report folder and a state folder: which verdict, which files, and when the baseline moves on.
struct ScreenshotReviewTests {
    static let yaml = """
        flavours:
          modern: {archs: [arm64], deployment_target: "15.0"}
        devices:
          a: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-A, dashboard: wall-hall}
          b: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-B, dashboard: wall-hall}
          c: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-C}
        """

    let root: URL
    let plan: DeployPlan

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-visual-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: Self.yaml, file: "devices.yaml")
        plan = try DeployPlanner(matrix: matrix, variables: [:], topology: Topology(host: .linux)).plan(
            options: DeployOptions(targets: ["all"], verify: true, screenshots: true),
            version: GitVersion(
                marketingVersion: "1.0", buildNumber: 1, tag: "v1.0", commitsSinceTag: 0, dirty: false,
                shallow: false),
            deployID: "d")
    }

    var report: URL { root.appendingPathComponent("report") }
    var baselines: ScreenshotBaselines {
        ScreenshotBaselines(directory: root.appendingPathComponent("state"), fileSystem: TestHost.fileSystem)
    }

    /// A dashboard screen: a page with `cards` card boxes stacked from the top.
    static func screen(cards: Int, width: Int = 300, height: Int = 400) -> RGBImage {
        var image = RGBImage(
            width: width, height: height, fill: RGBImage.Color(red: 250, green: 250, blue: 250))
        for index in 0..<cards {
            image.fill(
                x: 10, y: 10 + index * 60, width: width - 20, height: 50,
                color: RGBImage.Color(red: 3, green: 169, blue: 244))
        }
        return image
    }

    /// Results whose screenshots are these images (written to the report folder); `verified` false
    /// makes a device "not verified".
    func results(_ screens: [String: RGBImage], unverified: Set<String> = []) throws -> [DeviceResult] {
        try ["a", "b", "c"].compactMap { id in
            guard let image = screens[id] else { return nil }
            let path = "screenshots/\(id).png"
            try FileWriter(fileSystem: TestHost.fileSystem).write(
                try ImageCodec.encode(image, as: .png), to: report.appendingPathComponent(path))
            let verified = !unverified.contains(id)
            return DeviceResult(
                id: id, name: id, ios: "15.8", transport: "usb", version: "1.0 (1)",
                outcome: verified ? .succeeded : .unverified, reason: nil, failedStep: nil,
                install: .installed,
                verification: verified ? .loaded(seconds: 1) : .skipped(reason: "--no-verify"), steps: [],
                screenshot: path, crashReports: [], seconds: 1)
        }
    }

    func review(_ results: [DeviceResult], _ review: ScreenshotReview? = nil) -> ScreenshotReview.Outcome {
        (review ?? ScreenshotReview(baselines: baselines)).review(
            results, plan: plan, reportDirectory: report)
    }

    @Test func theFirstVerifiedScreenshotBecomesTheBaselineAndTheNextIdenticalOneIsTheSame() throws {
        let first = review(
            try results(["a": Self.screen(cards: 2), "c": Self.screen(cards: 1)], unverified: ["c"]))
        #expect(first.results.map { $0.visual?.verdict } == [.noBaseline, .noBaseline])
        #expect(
            first.results.map { $0.visual?.baselineUpdated } == [true, false],
            "only a verified deploy sets it")
        #expect(first.results[0].visual?.dashboard == "wall-hall")
        #expect(first.results[1].visual?.dashboard == "unchanged")
        let file = root.appendingPathComponent("state/a/wall-hall.png")
        #expect(try ImageCodec.decode(try Data(contentsOf: file)) == Self.screen(cards: 2))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("state/c").path))

        let second = review(try results(["a": Self.screen(cards: 2)]))
        let visual = try #require(second.results[0].visual)
        #expect(visual.verdict == .same && visual.matchPercentage == 100 && visual.baselineUpdated)
        #expect(visual.diff == nil && visual.baseline == nil, "a same screen adds no pictures to the report")
    }

    @Test func aChangedScreenKeepsItsBaselineAndTheReportGetsBothAndTheDifference() throws {
        _ = review(try results(["a": Self.screen(cards: 2)]))
        let kept = try Data(contentsOf: root.appendingPathComponent("state/a/wall-hall.png"))
        let changed = review(try results(["a": Self.screen(cards: 3)]))
        let visual = try #require(changed.results[0].visual)
        // A third 280×50 card on 300×400: 14,000 of 120,000 pixels, 88.3 % alike.
        #expect(visual.differingPixels == 280 * 50)
        #expect(visual.verdict == .different, "\(visual)")
        #expect(!visual.baselineUpdated)
        #expect(changed.results[0].outcome == .succeeded, "a visual change does not fail by default")
        #expect(try Data(contentsOf: root.appendingPathComponent("state/a/wall-hall.png")) == kept)
        #expect(visual.baseline == "screenshots/baseline/a.png" && visual.diff == "screenshots/diff/a.png")
        #expect(try Data(contentsOf: report.appendingPathComponent("screenshots/baseline/a.png")) == kept)
        let diff = try ImageCodec.decode(
            try Data(contentsOf: report.appendingPathComponent("screenshots/diff/a.png")))
        #expect(diff.color(x: 150, y: 150) == PixelComparison.DiffColors.darker)
        #expect(visual.summary == "different (88.3 % like its baseline)")

        // The same report folder again, the screen back to its baseline: the last run's pictures go.
        let back = review(try results(["a": Self.screen(cards: 2)]))
        #expect(back.results[0].visual?.verdict == .same)
        #expect(
            !FileManager.default.fileExists(
                atPath: report.appendingPathComponent("screenshots/diff/a.png").path))
        #expect(
            !FileManager.default.fileExists(
                atPath: report.appendingPathComponent("screenshots/baseline/a.png").path))

        // --fail-on-visual-change fails the device; --accept-screenshots takes the new screen.
        let strict = review(
            try results(["a": Self.screen(cards: 3)]),
            ScreenshotReview(baselines: baselines, failOnChange: true))
        #expect(strict.results[0].outcome == .failed && strict.results[0].failedStep == "screenshot")
        #expect(
            strict.results[0].reason?.hasPrefix("the screen different (88.3 % like its baseline)") == true)
        let accepted = review(
            try results(["a": Self.screen(cards: 3)]),
            ScreenshotReview(baselines: baselines, acceptNew: true, failOnChange: true))
        #expect(
            accepted.results[0].outcome == .succeeded && accepted.results[0].visual?.baselineUpdated == true)
        #expect(review(try results(["a": Self.screen(cards: 3)])).results[0].visual?.verdict == .same)
    }

    @Test func aScreenOfAnotherSizeIsDifferentAndSaysWhy() throws {
        _ = review(try results(["a": Self.screen(cards: 1)]))
        let rotated = review(try results(["a": Self.screen(cards: 1, width: 400, height: 300)]))
        let visual = try #require(rotated.results[0].visual)
        #expect(visual.verdict == .different && visual.matchPercentage == nil)
        #expect(visual.reason?.contains("300×400 before, 400×300 now") == true, "\(visual)")
        #expect(!visual.baselineUpdated)
    }

    @Test func devicesOfOneSizeOnOneDashboardAreComparedWithEachOther() throws {
        let alike = review(try results(["a": Self.screen(cards: 2), "b": Self.screen(cards: 2)]))
        #expect(alike.parity.map { "\($0.reference)/\($0.device) \($0.verdict.rawValue)" } == ["a/b same"])
        #expect(alike.parity.first?.screen == "300×400" && alike.parity.first?.diff == nil)
        let apart = review(try results(["a": Self.screen(cards: 2), "b": Self.screen(cards: 5)]))
        let check = try #require(apart.parity.first)
        #expect(check.verdict == .different && check.diff == "screenshots/parity/a--b.png")
        #expect(
            FileManager.default.fileExists(
                atPath: report.appendingPathComponent("screenshots/parity/a--b.png").path))
        // c shows another dashboard: never in a parity group with a and b.
        let other = review(try results(["a": Self.screen(cards: 2), "c": Self.screen(cards: 2)]))
        #expect(other.parity.isEmpty)
    }

    /// A real small PNG whose header is rewritten to declare a million by a million pixels (its
    /// CRC made right, so libpng takes the header as valid): a few hundred bytes.
    static func bomb() throws -> Data {
        var png = [UInt8](try ImageCodec.encode(screen(cards: 0, width: 4, height: 4), as: .png))
        for offset in [16, 20] {
            for index in 0..<4 {
                png[offset + index] = UInt8(truncatingIfNeeded: 1_000_000 >> (24 - 8 * index))
            }
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in png[12..<29] {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc = ~crc
        for index in 0..<4 { png[29 + index] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * index)) }
        return Data(png)
    }

    @Test func aPNGBombCostsThatDeviceItsComparisonAndTheOthersAreCompared() throws {
        let results = try results(["a": Self.screen(cards: 1), "b": Self.screen(cards: 1)])
        try Self.bomb().write(to: report.appendingPathComponent("screenshots/a.png"))
        let outcome = review(results)
        let visual = try #require(outcome.results[0].visual)
        #expect(visual.verdict == .unavailable && !visual.baselineUpdated)
        #expect(
            visual.summary.hasPrefix("comparison unavailable: the screenshot screenshots/a.png"),
            "\(visual.summary)")
        #expect(visual.summary.contains("1000000×1000000 pixels"), "\(visual.summary)")
        #expect(
            outcome.warnings.contains { $0.hasPrefix("a: comparison unavailable") }, "\(outcome.warnings)")
        #expect(outcome.results[0].outcome == .succeeded, "the deploy itself is not at stake")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("state/a").path))
        #expect(
            outcome.results[1].visual?.verdict == .noBaseline
                && outcome.results[1].visual?.baselineUpdated == true)
    }

    @Test func aBadBaselineIsReportedAndReplacedNotFatalForEveryLaterDeploy() throws {
        let kept = root.appendingPathComponent("state/a/wall-hall.png")
        try FileManager.default.createDirectory(
            at: kept.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.bomb().write(to: kept)
        let first = review(try results(["a": Self.screen(cards: 2)]))
        let visual = try #require(first.results[0].visual)
        #expect(visual.verdict == .unavailable && visual.baselineUpdated, "\(visual)")
        #expect(
            visual.summary.contains("the baseline \(kept.path) cannot be read as an image"),
            "\(visual.summary)")
        #expect(visual.summary.hasSuffix("; this screenshot is the baseline now"), "\(visual.summary)")
        #expect(review(try results(["a": Self.screen(cards: 2)])).results[0].visual?.verdict == .same)

        // A FIFO where the baseline goes: not read (no hang), said, and replaced by the new screenshot.
        try FileManager.default.removeItem(at: kept)
        #expect(mkfifo(kept.path, 0o600) == 0)
        let fifo = try #require(review(try results(["a": Self.screen(cards: 2)])).results[0].visual)
        #expect(
            fifo.verdict == .unavailable && fifo.reason?.contains("not a regular file") == true, "\(fifo)")
    }

    @Test func anUnverifiedFirstScreenshotDoesNotSayItWasKept() throws {
        let outcome = review(try results(["c": Self.screen(cards: 1)], unverified: ["c"]))
        let visual = try #require(outcome.results[0].visual)
        #expect(visual.verdict == .noBaseline && !visual.baselineUpdated)
        #expect(
            visual.summary
                == "first screenshot of unchanged: not kept as the baseline (this deploy's dashboard was not verified)",
            "\(visual.summary)")
    }

    @Test func theVerdictFollowsTheAppsConvention() {
        #expect(VisualVerdict(matchPercentage: 100) == .same)
        #expect(VisualVerdict(matchPercentage: 99) == .same)
        #expect(VisualVerdict(matchPercentage: 98.99) == .changedALittle)
        #expect(VisualVerdict(matchPercentage: 90) == .changedALittle)
        #expect(VisualVerdict(matchPercentage: 89.9) == .different)
    }
}
