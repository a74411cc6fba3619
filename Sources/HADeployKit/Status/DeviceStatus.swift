import Foundation

/// The installed build against the one a deploy would install.
public enum BuildState: String, Sendable, Codable {
    case upToDate = "up to date"
    case outdated
    case missing
    case unknown
}

/// What the app shows now, from the newest session of its log.
public struct DashboardNow: Sendable, Hashable, Encodable {
    /// When that session started (the log header's `Date:`).
    public var sessionStarted: Date?
    /// `loaded: 2 views, 5 cards` / `failed: Auth failed: …` / `no dashboard yet (last entry: …)`.
    public var summary: String
    public var loaded: Bool
}

/// One device's status: facts, and what needs attention.
public struct DeviceStatus: Sendable, Encodable {
    public var id: String
    public var name: String
    public var backend: String
    /// Not queried: this host cannot reach such a device (simctl on Linux…), with why.
    public var notOnThisHost: String?
    public var reachable: Bool
    /// Why the device was not reached, with the next step.
    public var unreachable: String?
    public var ios: Fact<String>
    public var build: BuildState
    public var installed: Fact<InstalledBuild?>
    public var expected: ExpectedBuild
    public var running: Fact<Bool>
    public var dashboard: Fact<DashboardNow>
    public var lastDeployedAt: Date?
    public var lastVerifiedAt: Date?
    public var battery: Fact<BatteryState>
    public var storage: Fact<StorageState>
    public var boot: Fact<BootState>
    /// Restarted since the last deploy from here (nil in `rebootedReason` when it cannot be told).
    public var rebootedSinceDeploy: Fact<Bool>
    /// What needs attention, one line each; empty: nothing.
    public var attention: [String]
    public var seconds: Double
}

/// A whole status check.
public struct StatusReport: Sendable, Encodable {
    public var version: String
    public var checkedAt: Date
    public var devices: [DeviceStatus]

    /// 0: every reachable device fine; 1: something needs attention; 3: a device was not reached
    /// (whatever else). Devices this host cannot reach at all (a simulator on Linux) count for none.
    public var exitCode: Int32 {
        if devices.contains(where: { $0.notOnThisHost == nil && !$0.reachable }) { return 3 }
        return devices.contains { !$0.attention.isEmpty } ? 1 : 0
    }
}
