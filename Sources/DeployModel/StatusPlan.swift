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

    public init(
        bundleID: String?, executable: String?, marketingVersion: String, buildNumber: String, source: String
    ) {
        self.bundleID = bundleID
        self.executable = executable
        self.marketingVersion = marketingVersion
        self.buildNumber = buildNumber
        self.source = source
    }

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

/// What the last deploy from here installed on a device (`.hadeploy/deployed/<id>.json`).
public struct LastDeploy: Sendable, Hashable, Encodable {
    public var bundleID: String
    public var build: InstalledBuild
    public var deployedAt: Date
    /// When a deploy last proved the dashboard loaded (nil: never recorded).
    public var verifiedAt: Date?

    public init(bundleID: String, build: InstalledBuild, deployedAt: Date, verifiedAt: Date?) {
        self.bundleID = bundleID
        self.build = build
        self.deployedAt = deployedAt
        self.verifiedAt = verifiedAt
    }
}

/// What `hadeploy status` asks of one device, resolved.
public struct DeviceStatusPlan: Sendable, Encodable {
    /// The device as a deploy would plan it (backend, UDID or host, availability).
    public var device: DevicePlan
    public var expected: ExpectedBuild
    /// What the last deploy from here installed, and when it was last verified (nil: none recorded).
    public var lastDeploy: LastDeploy?

    public init(device: DevicePlan, expected: ExpectedBuild, lastDeploy: LastDeploy?) {
        self.device = device
        self.expected = expected
        self.lastDeploy = lastDeploy
    }
}

/// A whole status check, as a value: `status --dry-run` could print it; the executor runs exactly it.
public struct StatusPlan: Sendable, Encodable {
    public var version: GitVersion
    public var devices: [DeviceStatusPlan]
    /// Per device: past it, the device is reported as not answering and the others carry on.
    public var deadlineSeconds: Double
    public var thresholds: StatusThresholds

    public init(
        version: GitVersion, devices: [DeviceStatusPlan], deadlineSeconds: Double,
        thresholds: StatusThresholds
    ) {
        self.version = version
        self.devices = devices
        self.deadlineSeconds = deadlineSeconds
        self.thresholds = thresholds
    }
}
