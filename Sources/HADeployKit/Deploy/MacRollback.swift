import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers

/// `hadeploy rollback mac`: puts back the Mac Catalyst app the last deploy replaced (hadeploy keeps
/// it in `previous/` beside the installed copy), reopens it and reads its log for a loaded dashboard.
public struct MacRollback: Sendable {
    public struct Outcome: Sendable {
        /// The restored copy (its path and version).
        public var restored: Artifact
        /// The log lines of the relaunch that prove (or disprove) a loaded dashboard.
        public var evidence: [String]
        public var loaded: Bool
    }

    let driver: MacDriver
    let bundleID: String
    let verificationTimeout: Double
    /// Times the wait for the relaunch's log.
    let clock: any WallClock

    /// Resolves `device` in devices.yaml; it must be the `mac` device. The bundle id is `bundleID`,
    /// else the last deploy's (`records`), else `.env`'s `BUNDLE_ID`.
    public init(
        matrix: DeviceMatrix, variables: [String: String], device: String, bundleID: String?,
        host: HostPlatform, runner: any ProcessRunner, fileSystem: any FileSystem, clock: any WallClock,
        records: DeployRecords? = nil
    ) throws {
        let resolved = try RollbackTarget(
            matrix: matrix, variables: variables, device: device, bundleID: bundleID, records: records,
            transport: "mac", rejection: "not the Mac"
        ) { Backends.rollback(for: $0) == .mac }
        guard let bundle = resolved.bundleID else {
            throw RollbackTarget.noBundleID(device, transport: "mac")
        }
        let target = resolved.device
        let home = URL(
            fileURLWithPath: variables["HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? fileSystem.homeDirectory.path)
        self.driver = MacDriver(
            configuration: .init(
                label: target.name, host: host, home: home,
                deadlines: DriverDeadlines(timeouts: target.timeouts)),
            runner: runner, fileSystem: fileSystem, clock: clock)
        self.bundleID = bundle
        self.verificationTimeout = target.verificationTimeout
        self.clock = clock
    }

    init(driver: MacDriver, bundleID: String, verificationTimeout: Double, clock: any WallClock) {
        self.driver = driver
        self.bundleID = bundleID
        self.verificationTimeout = verificationTimeout
        self.clock = clock
    }

    /// The version kept in `previous/`, if any.
    public func previous() async throws -> Artifact? {
        try await driver.previousInstall(bundleID: bundleID)
    }

    /// Restores, reopens, then waits (up to the device's verification timeout) for a new log session
    /// to show the dashboard loaded or failing.
    public func run() async throws -> Outcome {
        let probe = Artifact(
            path: "", bundleID: bundleID, executable: "", marketingVersion: "", buildNumber: "", flavour: "",
            archs: [], platform: .macCatalyst)
        func log() async throws -> Data? {
            try await driver.appDataFile(probe, relativePath: AppLogEvidence.path)
        }
        try await driver.requireMacOS("rollback")
        let before = try await log().map(AppLogEvidence.sessions) ?? 0
        let restored = try await driver.rollback(bundleID: bundleID)
        let relaunch = try await AppLogEvidence.relaunch(
            after: before, timeout: verificationTimeout, clock: clock, read: log)
        return Outcome(restored: restored, evidence: relaunch.evidence, loaded: relaunch.loaded)
    }
}
