import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import SSHTransport
import Versioning

/// `hadeploy rollback DEVICE`: puts back the app and preferences a deploy backed up on a jailbroken
/// device, relaunches the app and checks its log for a loaded dashboard.
public struct JailbreakRollback: Sendable {
    public struct Outcome: Sendable {
        public var report: RollbackReport
        /// The log lines of the relaunch that prove (or disprove) a loaded dashboard.
        public var evidence: [String]
        public var loaded: Bool
    }

    let driver: SSHDriver
    let device: String
    /// Times the wait for the relaunch's log.
    let clock: any WallClock
    /// nil: nothing here named the app; the device's backups are asked (`bundleID()`).
    let knownBundleID: String?
    let verificationTimeout: Double

    /// Resolves `device` in devices.yaml; it must be reached over SSH. The bundle id is `bundleID`, else
    /// the app the last deploy from here installed (`records`), else `.env`'s `BUNDLE_ID` (the key the
    /// old scripts used), else the app the device keeps backups of.
    public init(
        matrix: DeviceMatrix, variables: [String: String], environment: [String: String], device: String,
        bundleID: String?, stateDirectory: URL, fileSystem: any FileSystem, clock: any WallClock,
        records: DeployRecords? = nil
    ) throws {
        let resolved = try RollbackTarget(
            matrix: matrix, variables: variables, device: device, bundleID: bundleID, records: records,
            transport: "ssh", rejection: "not reached over SSH"
        ) { $0.ssh != nil || Backends.rollback(for: $0) == .jailbroken }
        let plan = try DeployPlanner(
            matrix: matrix, variables: variables, topology: .current(environment: environment)
        ).plan(
            options: DeployOptions(targets: [device], verify: false), version: GitVersion.unversioned,
            deployID: "rollback")
        guard let devicePlan = plan.devices.first else {
            throw TransportUnavailable(device: device, transport: "ssh", reason: "no such device")
        }
        guard let ssh = try Backends.configuration(SSHBackend.self, of: devicePlan) else {
            throw TransportUnavailable(device: device, transport: "ssh", reason: "not reached over SSH")
        }
        let config = try SSHDriver.config(
            ssh, plan: devicePlan, environment: variables, fileSystem: fileSystem)
        self.driver = SSHDriver(
            deployer: JailbreakDeployer(config: config, fileSystem: fileSystem, clock: clock),
            plan: devicePlan,
            workDirectory: stateDirectory.appendingPathComponent("ssh"))
        self.device = device
        self.clock = clock
        self.knownBundleID = resolved.bundleID
        self.verificationTimeout = devicePlan.verification.timeout
    }

    /// The app to roll back: the one named here, else the one whose backup on the device is the newest
    /// (`/var/mobile/Library/HADashboard-backups/<bundle id>/<time>/`).
    public func bundleID() async throws -> String {
        if let knownBundleID { return knownBundleID }
        guard let newest = try await driver.deployer.backedUpApps().first else {
            throw RollbackTarget.noBundleID(device, transport: "ssh", asked: "the device keeps no backup")
        }
        return newest.bundleID
    }

    public func backups() async throws -> [String] {
        try await driver.backups(bundleID: try await bundleID())
    }

    /// Restores, relaunches, then waits (up to the device's verification timeout) for the new log
    /// session to show the dashboard loaded or failing.
    public func run(backup: String?) async throws -> Outcome {
        let before =
            try await driver.deployer.mobileFile(AppLogEvidence.path).map(AppLogEvidence.sessions) ?? 0
        let report = try await driver.rollback(bundleID: try await bundleID(), backup: backup)
        let relaunch = try await AppLogEvidence.relaunch(
            after: before, timeout: verificationTimeout, clock: clock
        ) {
            try await driver.deployer.mobileFile(AppLogEvidence.path)
        }
        return Outcome(report: report, evidence: relaunch.evidence, loaded: relaunch.loaded)
    }
}
