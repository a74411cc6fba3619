import Foundation
import Versioning

/// The installed build against the one a deploy would install.
public enum BuildState: String, Sendable, Codable {
    case upToDate = "up to date"
    case outdated
    case missing
    case unknown
}

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

extension ExpectedBuild {
    /// The build this artifact installs.
    public init(artifact: Artifact) {
        self.init(
            bundleID: artifact.bundleID, executable: artifact.executable,
            marketingVersion: artifact.marketingVersion, buildNumber: artifact.buildNumber,
            source: artifact.path)
    }

    /// The build a deploy would make at this version: what it would stamp, from the git tags.
    public init(version: GitVersion, bundleID: String?) {
        self.init(
            bundleID: bundleID, executable: nil, marketingVersion: version.marketingVersion,
            buildNumber: String(version.buildNumber), source: "git tags (\(version))")
    }
}

/// What the app shows now, from the newest session of its log.
public struct DashboardNow: Sendable, Hashable, Encodable {
    /// When that session started (the log header's `Date:`).
    public var sessionStarted: Date?
    /// `loaded: 2 views, 5 cards` / `failed: Auth failed: …` / `no dashboard yet (last entry: …)`.
    public var summary: String
    public var loaded: Bool

    public init(sessionStarted: Date?, summary: String, loaded: Bool) {
        self.sessionStarted = sessionStarted
        self.summary = summary
        self.loaded = loaded
    }
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
    /// The `active_dashboard` the app's mobile_app device last reported to Home Assistant (nil: not
    /// asked — the device's `ha_integration` is off, or no Home Assistant is configured).
    public var homeAssistantDashboard: Fact<String>?
    public var lastDeployedAt: Date?
    public var lastVerifiedAt: Date?
    public var battery: Fact<BatteryState>
    public var storage: Fact<StorageState>
    public var boot: Fact<BootState>
    /// Restarted and not unlocked since (Before First Unlock): the device opens none of the app's data
    /// until its passcode is entered once.
    public var needsUnlock = false
    /// The installed build's provisioning profile (its expiry), from the device's own list.
    public var profile: Fact<ProfileState?> = .unavailable("the installed profiles: not read")
    /// Restarted since the last deploy from here (nil in `rebootedReason` when it cannot be told).
    public var rebootedSinceDeploy: Fact<Bool>
    /// What needs attention, one line each; empty: nothing.
    public var attention: [String]
    public var seconds: Double
    /// A Wi-Fi device hadeploy's usbmuxd reached: its address, and how it was found (mDNS, or its
    /// address in devices.yaml).
    public var address: String?
    public var foundBy: String?

    public init(
        id: String, name: String, backend: String, notOnThisHost: String?, reachable: Bool,
        unreachable: String?,
        ios: Fact<String>, build: BuildState, installed: Fact<InstalledBuild?>, expected: ExpectedBuild,
        running: Fact<Bool>, dashboard: Fact<DashboardNow>, lastDeployedAt: Date?, lastVerifiedAt: Date?,
        battery: Fact<BatteryState>, storage: Fact<StorageState>, boot: Fact<BootState>,
        rebootedSinceDeploy: Fact<Bool>, attention: [String], seconds: Double
    ) {
        self.id = id
        self.name = name
        self.backend = backend
        self.notOnThisHost = notOnThisHost
        self.reachable = reachable
        self.unreachable = unreachable
        self.ios = ios
        self.build = build
        self.installed = installed
        self.expected = expected
        self.running = running
        self.dashboard = dashboard
        self.lastDeployedAt = lastDeployedAt
        self.lastVerifiedAt = lastVerifiedAt
        self.battery = battery
        self.storage = storage
        self.boot = boot
        self.rebootedSinceDeploy = rebootedSinceDeploy
        self.attention = attention
        self.seconds = seconds
    }
}

/// A whole status check.
public struct StatusReport: Sendable, Encodable {
    public var version: String
    public var checkedAt: Date
    public var devices: [DeviceStatus]

    public init(version: String, checkedAt: Date, devices: [DeviceStatus]) {
        self.version = version
        self.checkedAt = checkedAt
        self.devices = devices
    }

    /// 0: every reachable device fine; 1: something needs attention; 3: a device was not reached
    /// (whatever else). Devices this host cannot reach at all (a simulator on Linux) count for none.
    public var exitCode: Int32 {
        if devices.contains(where: { $0.notOnThisHost == nil && !$0.reachable }) { return 3 }
        return devices.contains { !$0.attention.isEmpty } ? 1 : 0
    }
}
