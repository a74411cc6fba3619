import DeployModel
import Foundation
import HADeployCore

/// Per-step deadlines of a driver's own commands: devices.yaml `timeouts:` overrides, else the one
/// default table (`StepDeadlines`), so the tool is stopped by us with a clear message rather than
/// left running.
public struct DriverDeadlines: Sendable, Hashable {
    public var overrides: [String: Double]

    public init(overrides: [String: Double] = [:]) {
        self.overrides = overrides
    }

    static var defaults: [String: Double] { StepDeadlines.defaults }

    public func limit(_ step: String) -> Duration {
        seconds(step, default: Self.defaults[step] ?? 60)
    }

    /// An install's deadline: a minute plus the bundle at `bytesPerSecond` (devices.yaml may override).
    public func install(bytes: Int64, bytesPerSecond: Double) -> Duration {
        seconds("install", default: 60 + Double(bytes) / bytesPerSecond)
    }

    func seconds(_ step: String, default value: Double) -> Duration {
        .checkedSeconds(overrides[step] ?? value)
    }

    /// The size of an `.ipa` file or an `.app` directory (its regular files), for sizing install deadlines.
    public static func size(of path: String, in fileSystem: any FileSystem) -> Int64 {
        guard fileSystem.fileExists(atPath: path) else { return 0 }
        if !fileSystem.isDirectory(atPath: path) {
            return ((try? fileSystem.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return fileSystem.allocatedSize(ofDirectory: URL(fileURLWithPath: path))
    }
}
