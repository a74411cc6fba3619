import DeployModel
import Foundation
import HADeployCore
import ImageCodec

/// After the devices: each screenshot compared with that device's baseline for its dashboard, and
/// the devices of one screen size showing one dashboard compared with each other (parity). The
/// baseline moves on with every verified deploy whose screen is the same (live values drift slowly);
/// a changed screen keeps the old baseline until a deploy with `--accept-screenshots`, so the change
/// is reported until someone has looked at it.
public struct ScreenshotReview: Sendable {
    public var baselines: ScreenshotBaselines
    /// `--accept-screenshots`: this deploy's screenshots become the baselines whatever they show.
    public var acceptNew: Bool
    /// `--fail-on-visual-change`: a screen that changed fails its device.
    public var failOnChange: Bool
    public var comparison: PixelComparison

    public init(
        baselines: ScreenshotBaselines, acceptNew: Bool = false, failOnChange: Bool = false,
        comparison: PixelComparison = PixelComparison()
    ) {
        self.baselines = baselines
        self.acceptNew = acceptNew
        self.failOnChange = failOnChange
        self.comparison = comparison
    }

    public struct Outcome: Sendable {
        public var results: [DeviceResult]
        public var parity: [ParityCheck]
        /// What could not be read or kept (a warning each: the deploy itself is not at stake).
        public var warnings: [String]
    }

    /// A screenshot kept for parity: decoded once.
    private struct Shot {
        var device: String
        var dashboard: String
        var image: RGBImage
    }

    /// The report's folders of comparison pictures (baseline copies, differences, parity).
    static let pictureFolders = ["screenshots/baseline", "screenshots/diff", "screenshots/parity"]

    public func review(_ results: [DeviceResult], plan: DeployPlan, reportDirectory: URL) -> Outcome {
        // A report folder used again: the last run's pictures go, so every one left is this run's.
        for folder in Self.pictureFolders {
            let url = reportDirectory.appendingPathComponent(folder)
            if baselines.fileSystem.fileExists(atPath: url.path) {
                try? baselines.fileSystem.removeItem(at: url)
            }
        }
        var reviewed = results
        var warnings: [String] = []
        var shots: [Shot] = []
        for index in reviewed.indices {
            let result = reviewed[index]
            guard let path = result.screenshot, let device = plan.devices.first(where: { $0.id == result.id })
            else { continue }
            let dashboard = ScreenshotBaselines.dashboardKey(device.dashboard)
            let png: Data
            let image: RGBImage
            do {
                guard
                    let data = try ScreenshotBaselines.readPicture(
                        reportDirectory.appendingPathComponent(path), fileSystem: baselines.fileSystem)
                else { throw PictureProblem("it is not there") }
                png = data
                image = try ImageCodec.decode(png)
            } catch {
                // This device's screen goes uncompared, said on its card; the others are compared.
                let reason =
                    "the screenshot \(path) cannot be read as an image: \(SystemErrorText.message(error))"
                reviewed[index].visual = VisualCheck(
                    dashboard: dashboard, verdict: .unavailable, reason: reason)
                warnings.append("\(result.id): comparison unavailable: \(reason)")
                continue
            }
            var check = compare(image, device: result.id, dashboard: dashboard, into: reportDirectory)
            let verified: Bool
            if case .loaded = result.verification { verified = true } else { verified = false }
            let mayReplace = verified || (acceptNew && result.outcome == .unverified)
            // A baseline that cannot be read is replaced by a good screenshot, or every later deploy
            // would find it unreadable again.
            let replaces = [VisualVerdict.same, .noBaseline, .unavailable].contains(check.verdict)
            if mayReplace && (acceptNew || replaces) {
                do {
                    try baselines.write(png, device: result.id, dashboard: dashboard)
                    check.baselineUpdated = true
                } catch {
                    if check.verdict == .noBaseline {
                        check.reason = "it could not be written: \(SystemErrorText.message(error))"
                    }
                    warnings.append(
                        "\(result.id): could not keep the screenshot as the baseline: \(SystemErrorText.message(error))"
                    )
                }
            } else if check.verdict == .noBaseline {
                check.reason = "this deploy's dashboard was not verified"
            }
            reviewed[index].visual = check
            if failOnChange && check.verdict.isChange && result.outcome == .succeeded
                && !check.baselineUpdated
            {
                reviewed[index].outcome = .failed
                reviewed[index].failedStep = "screenshot"
                reviewed[index].reason =
                    "the screen \(check.summary) (--fail-on-visual-change; --accept-screenshots takes it as "
                    + "the new baseline)"
            }
            if verified { shots.append(Shot(device: result.id, dashboard: dashboard, image: image)) }
        }
        return Outcome(
            results: reviewed, parity: parity(shots, into: reportDirectory), warnings: warnings)
    }

    private func compare(_ image: RGBImage, device: String, dashboard: String, into reportDirectory: URL)
        -> VisualCheck
    {
        let old: Data
        let before: RGBImage
        do {
            guard let data = try baselines.read(device: device, dashboard: dashboard) else {
                return VisualCheck(dashboard: dashboard, verdict: .noBaseline)
            }
            old = data
            before = try ImageCodec.decode(old)
        } catch {
            return VisualCheck(
                dashboard: dashboard, verdict: .unavailable,
                reason: "the baseline \(baselines.file(device: device, dashboard: dashboard).path) cannot be "
                    + "read as an image: \(SystemErrorText.message(error))")
        }
        let name = PathNames.component(device) + ".png"
        var check: VisualCheck
        var diff: RGBImage?
        switch comparison.compare(before, image) {
        case .differentSize(let reason):
            check = VisualCheck(dashboard: dashboard, verdict: .different, reason: reason)
        case .compared(let difference):
            check = VisualCheck(
                dashboard: dashboard, verdict: VisualVerdict(matchPercentage: difference.matchPercentage),
                matchPercentage: difference.matchPercentage, differingPixels: difference.differingPixels)
            diff = difference.diff
        }
        guard check.verdict.isChange else { return check }
        // The contact sheet shows the old one beside the new one: it needs a copy the report keeps.
        check.baseline = write(old, "screenshots/baseline/\(name)", into: reportDirectory)
        if let diff, let png = try? ImageCodec.encode(diff, as: .png) {
            check.diff = write(png, "screenshots/diff/\(name)", into: reportDirectory)
        }
        return check
    }

    /// Every group of verified devices showing one dashboard on one screen size, each compared with
    /// the group's first device.
    private func parity(_ shots: [Shot], into reportDirectory: URL) -> [ParityCheck] {
        var groups: [[Shot]] = []
        for shot in shots {
            if let index = groups.firstIndex(where: {
                $0[0].dashboard == shot.dashboard && $0[0].image.width == shot.image.width
                    && $0[0].image.height == shot.image.height
            }) {
                groups[index].append(shot)
            } else {
                groups.append([shot])
            }
        }
        var checks: [ParityCheck] = []
        for group in groups where group.count > 1 {
            let reference = group[0]
            for other in group.dropFirst() {
                guard case .compared(let difference) = comparison.compare(reference.image, other.image) else {
                    continue
                }
                let verdict = VisualVerdict(matchPercentage: difference.matchPercentage)
                var diff: String?
                if verdict != .same, let png = try? ImageCodec.encode(difference.diff, as: .png) {
                    let name =
                        PathNames.component(reference.device) + "--" + PathNames.component(other.device)
                        + ".png"
                    diff = write(png, "screenshots/parity/\(name)", into: reportDirectory)
                }
                checks.append(
                    ParityCheck(
                        dashboard: reference.dashboard,
                        screen: "\(reference.image.width)×\(reference.image.height)",
                        reference: reference.device, device: other.device, verdict: verdict,
                        matchPercentage: difference.matchPercentage, diff: diff))
            }
        }
        return checks
    }

    /// Writes a file under the report folder; its relative path, or nil when it could not be written.
    private func write(_ data: Data, _ relative: String, into reportDirectory: URL) -> String? {
        do {
            try FileWriter(fileSystem: baselines.fileSystem).write(
                data, to: reportDirectory.appendingPathComponent(relative))
            return relative
        } catch {
            return nil
        }
    }
}
