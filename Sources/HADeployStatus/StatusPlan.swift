import DeployModel
import Foundation
import Versioning

/// Limits below which a device needs attention.
public struct StatusThresholds: Sendable, Hashable, Encodable {
    /// Battery at or below this percentage, not charging.
    public var batteryPercent: Int = 20
    /// Free storage below this many bytes.
    public var freeBytes: Int64 = 1_000_000_000
}

/// What the last deploy from here installed on a device (`.hadeploy/deployed/<id>.json`).
public struct LastDeploy: Sendable, Hashable, Encodable {
    public var bundleID: String
    public var build: InstalledBuild
    public var deployedAt: Date
    /// When a deploy last proved the dashboard loaded (nil: never recorded).
    public var verifiedAt: Date?
}

/// What `hadeploy status` asks of one device, resolved.
public struct DeviceStatusPlan: Sendable, Encodable {
    /// The device as a deploy would plan it (backend, UDID or host, availability).
    public var device: DevicePlan
    public var expected: ExpectedBuild
    /// What the last deploy from here installed, and when it was last verified (nil: none recorded).
    public var lastDeploy: LastDeploy?
}

/// A whole status check, as a value: `status --dry-run` could print it; the executor runs exactly it.
public struct StatusPlan: Sendable, Encodable {
    public var version: GitVersion
    public var devices: [DeviceStatusPlan]
    /// Per device: past it, the device is reported as not answering and the others carry on.
    public var deadlineSeconds: Double
    public var thresholds: StatusThresholds
}
