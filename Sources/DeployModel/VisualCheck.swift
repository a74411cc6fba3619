import Foundation

/// How a screenshot compares with another, in the app's own words (its screenshot script's
/// convention): at least 99 % of the pixels alike is the same screen, at least 90 % changed a little,
/// less is a different screen.
public enum VisualVerdict: String, Sendable, Codable, Hashable {
    case same
    case changedALittle = "changed a little"
    case different
    /// The first screenshot of this dashboard on this device: it becomes the baseline.
    case noBaseline = "no baseline"
    /// The screenshot or the baseline could not be read as an image (the reason says which and why):
    /// that device's screen is not compared; the other devices' are.
    case unavailable = "comparison unavailable"

    public init(matchPercentage: Double) {
        if matchPercentage >= 99 {
            self = .same
        } else if matchPercentage >= 90 {
            self = .changedALittle
        } else {
            self = .different
        }
    }

    /// Whether the screen moved away from its baseline (what `--fail-on-visual-change` fails on).
    public var isChange: Bool { self == .changedALittle || self == .different }
}

/// A device's screenshot against its baseline: the last verified deploy's screenshot of the same
/// dashboard on the same device.
public struct VisualCheck: Sendable, Codable, Hashable {
    /// The dashboard the baseline belongs to (`default`: the app's default; `unchanged`: whatever the
    /// device kept). Neither can be a dashboard's url_path, which Home Assistant requires to hold a `-`.
    public var dashboard: String
    public var verdict: VisualVerdict
    /// 0 to 100; nil when there was nothing to compare with, or the sizes differ.
    public var matchPercentage: Double?
    public var differingPixels: Int?
    /// Why the verdict is what it is when the pixels were not compared (sizes, an unreadable file).
    public var reason: String?
    /// The baseline as it was before this deploy, and the difference, in the report folder.
    public var baseline: String?
    public var diff: String?
    /// Whether this deploy's screenshot is now the baseline.
    public var baselineUpdated: Bool

    public init(
        dashboard: String, verdict: VisualVerdict, matchPercentage: Double? = nil,
        differingPixels: Int? = nil,
        reason: String? = nil, baseline: String? = nil, diff: String? = nil, baselineUpdated: Bool = false
    ) {
        self.dashboard = dashboard
        self.verdict = verdict
        self.matchPercentage = matchPercentage
        self.differingPixels = differingPixels
        self.reason = reason
        self.baseline = baseline
        self.diff = diff
        self.baselineUpdated = baselineUpdated
    }

    /// One line for people: `changed a little (96.3 % like its baseline)`.
    public var summary: String {
        switch verdict {
        case .noBaseline:
            return "first screenshot of \(dashboard): "
                + (baselineUpdated
                    ? "kept as the baseline" : "not kept as the baseline (\(reason ?? "not verified"))")
        case .unavailable:
            return "comparison unavailable: \(reason ?? "the pictures could not be read")"
                + (baselineUpdated ? "; this screenshot is the baseline now" : "")
        case .same, .changedALittle, .different:
            if let matchPercentage {
                return "\(verdict.rawValue) (\(String(format: "%.1f", matchPercentage)) % like its baseline)"
            }
            return verdict.rawValue + (reason.map { ": \($0)" } ?? "")
        }
    }
}

/// Two devices of the same screen size showing the same dashboard, compared with each other.
public struct ParityCheck: Sendable, Codable, Hashable {
    public var dashboard: String
    /// `1536×2048`.
    public var screen: String
    /// The device every other one of the group is compared with (the first in plan order).
    public var reference: String
    public var device: String
    public var verdict: VisualVerdict
    public var matchPercentage: Double
    public var diff: String?

    public init(
        dashboard: String, screen: String, reference: String, device: String, verdict: VisualVerdict,
        matchPercentage: Double, diff: String? = nil
    ) {
        self.dashboard = dashboard
        self.screen = screen
        self.reference = reference
        self.device = device
        self.verdict = verdict
        self.matchPercentage = matchPercentage
        self.diff = diff
    }
}
