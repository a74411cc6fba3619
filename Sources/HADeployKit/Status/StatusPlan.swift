import Foundation
import Versioning

/// The build a deploy would install on a device now.
public struct ExpectedBuild: Sendable, Hashable, Encodable {
    public var bundleID: String?
    public var executable: String?
    public var marketingVersion: String
    public var buildNumber: String
    /// Where the figures come from: an artifact's path, or "git tags" (what a build would stamp).
    public var source: String

    public var build: InstalledBuild {
        InstalledBuild(marketingVersion: marketingVersion, buildNumber: buildNumber)
    }
}

/// Limits below which a device needs attention.
public struct StatusThresholds: Sendable, Hashable, Encodable {
    /// Battery at or below this percentage, not charging.
    public var batteryPercent: Int = 20
    /// Free storage below this many bytes.
    public var freeBytes: Int64 = 1_000_000_000

    public init() {}
}

/// What `hadeploy status` asks of one device, resolved.
public struct DeviceStatusPlan: Sendable, Encodable {
    /// The device as a deploy would plan it (backend, UDID or host, availability).
    public var device: DevicePlan
    public var expected: ExpectedBuild
    /// What the last deploy from here installed, and when it was last verified (nil: none recorded).
    public var lastDeploy: DeployRecords.Record?
}

/// A whole status check, as a value: `status --dry-run` could print it; the executor runs exactly it.
public struct StatusPlan: Sendable, Encodable {
    public var version: GitVersion
    public var devices: [DeviceStatusPlan]
    /// Per device: past it, the device is reported as not answering and the others carry on.
    public var deadlineSeconds: Double
    public var thresholds: StatusThresholds
}
