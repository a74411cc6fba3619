import Foundation
import HADeployCore

/// The steps a device's deploy can have, in the order the pipeline runs them.
public enum StepID: String, Sendable, Hashable, Codable, CaseIterable {
    case connect
    /// Mount the Developer Disk Image (USB, iOS < 17; pymobiledevice3's auto-mount).
    case mount
    case install
    /// Subscribe to `ha_dashboard_loaded` before the launch (devices whose app build sends it).
    case subscribe
    case launch
    /// Wait for proof that the dashboard loaded.
    case verify
    case crashCheck = "crash_check"
    case screenshot
}

/// How long a step may take.
public enum StepDeadline: Sendable, Hashable, Codable, CustomStringConvertible {
    case seconds(Double)
    /// A base plus the app's size at a pessimistic rate: known once the artifact is.
    case sizedToApp(base: Double, bytesPerSecond: Double)

    /// The deadline for an artifact of `bytes`.
    public func duration(appBytes bytes: Int64) -> Duration {
        switch self {
        case .seconds(let value): return .checkedSeconds(value)
        case .sizedToApp(let base, let rate): return .checkedSeconds(base + Double(bytes) / rate)
        }
    }

    public var description: String {
        switch self {
        case .seconds(let value): return "\(Self.format(value)) s"
        case .sizedToApp(let base, let rate):
            return "\(Self.format(base)) s + the app at \(Self.format(rate / 1_000_000)) MB/s"
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    enum CodingKeys: String, CodingKey { case base, bytesPerSecond }

    /// Seconds, or `{"base": seconds, "bytesPerSecond": rate}`: data, never the sentence people read.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .seconds(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .sizedToApp(let base, let rate):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(base, forKey: .base)
            try container.encode(rate, forKey: .bytesPerSecond)
        }
    }

    public init(from decoder: any Decoder) throws {
        if let seconds = try? decoder.singleValueContainer().decode(Double.self) {
            self = .seconds(seconds)
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self = .sizedToApp(
            base: try container.decode(Double.self, forKey: .base),
            bytesPerSecond: try container.decode(Double.self, forKey: .bytesPerSecond))
    }
}

/// One step of a device's plan, resolved: what it does, its deadline and how often a transient
/// fault is retried (after re-probing the device).
public struct PlanStep: Sendable, Hashable, Codable {
    public var id: StepID
    public var deadline: StepDeadline
    public var retries: Int

    /// The most retries the planner gives a step (connect's); a plan file asking more is refused.
    public static let maximumRetries = 2

    public init(_ id: StepID, deadline: StepDeadline, retries: Int = 0) {
        self.id = id
        self.deadline = deadline
        self.retries = retries
    }
}
