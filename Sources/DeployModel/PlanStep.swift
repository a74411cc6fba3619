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

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .seconds(let value): try container.encode(value)
        case .sizedToApp: try container.encode(description)
        }
    }

    /// Seconds, or the sized form as `description` writes it (`600 s + the app at 1 MB/s`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let seconds = try? container.decode(Double.self) {
            self = .seconds(seconds)
            return
        }
        let text = try container.decode(String.self)
        let parts = text.components(separatedBy: " s + the app at ")
        guard parts.count == 2, parts[1].hasSuffix(" MB/s"), let base = Double(parts[0]),
            let rate = Double(parts[1].dropLast(" MB/s".count))
        else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a step deadline is seconds or 'N s + the app at R MB/s'")
        }
        self = .sizedToApp(base: base, bytesPerSecond: rate * 1_000_000)
    }
}

/// One step of a device's plan, resolved: what it does, its deadline and how often a transient
/// fault is retried (after re-probing the device).
public struct PlanStep: Sendable, Hashable, Codable {
    public var id: StepID
    public var summary: String
    public var deadline: StepDeadline
    public var retries: Int

    /// The most retries the planner gives a step (connect's); a plan file asking more is refused.
    public static let maximumRetries = 2

    public init(_ id: StepID, _ summary: String, deadline: StepDeadline, retries: Int = 0) {
        self.id = id
        self.summary = summary
        self.deadline = deadline
        self.retries = retries
    }
}
