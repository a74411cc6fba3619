import DeployModel
import Foundation
import HADeployKit

/// Makes the status plan from what a deploy would do: the deploy plan's devices, the artifacts a
/// deploy would install (when given), and the deploy records.
public struct StatusPlanner: Sendable {
    public var records: DeployRecords
    /// BUNDLE_ID from `.env`, or the demo app's for virtual twins: the app asked about when neither
    /// an artifact nor a record names it.
    public var defaultBundleID: String?
    public var deadlineSeconds: Double = 15

    /// `artifacts`: flavour → the artifact `--artifact`/`--artifacts` name; without one, a deploy
    /// would build (or make the demo app) at the git version.
    public func plan(_ deploy: DeployPlan, artifacts: [String: Artifact]) -> StatusPlan {
        let devices = deploy.devices.map { planned -> DeviceStatusPlan in
            // Reaching the device gets part of the whole answer's deadline: a device that is not
            // there says why (not listed, refused) before the status gives up on it.
            var device = planned
            for index in device.steps.indices where device.steps[index].id == .connect {
                device.steps[index].deadline = .seconds(max(1, deadlineSeconds / 2))
            }
            let record = records.read(device: device.id)
            let last = record.map {
                LastDeploy(
                    bundleID: $0.bundleID,
                    build: InstalledBuild(marketingVersion: $0.marketingVersion, buildNumber: $0.buildNumber),
                    deployedAt: $0.deployedAt, verifiedAt: $0.verifiedAt)
            }
            let expected =
                artifacts[device.flavour].map(ExpectedBuild.init(artifact:))
                ?? ExpectedBuild(version: deploy.version, bundleID: record?.bundleID ?? defaultBundleID)
            return DeviceStatusPlan(device: device, expected: expected, lastDeploy: last)
        }
        return StatusPlan(
            version: deploy.version, devices: devices, deadlineSeconds: deadlineSeconds,
            thresholds: StatusThresholds())
    }
}
