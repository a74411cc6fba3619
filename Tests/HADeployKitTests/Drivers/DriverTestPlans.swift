import DeployModel
import DeviceSpec
import Foundation
import HADeployDrivers
import HADeployKit
import Testing

@testable import Versioning

/// Device plans from the committed devices.yaml, for checking what each driver's `make` reads.
enum DriverTestPlans {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func plan(_ id: String, variables: [String: String] = [:], host: HostPlatform = .macOS) throws
        -> (plan: DevicePlan, device: Device, matrix: DeviceMatrix)
    {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: root.appendingPathComponent("devices.yaml"), displayName: "devices.yaml")
        let version = GitVersion(
            marketingVersion: "1.4.0", buildNumber: 212, tag: "v1.4.0", commitsSinceTag: 0, dirty: false,
            shallow: false)
        let deployPlan = try DeployPlanner(
            matrix: matrix, variables: variables, topology: Topology(host: host)
        )
        .plan(options: DeployOptions(targets: [id]), version: version, deployID: "d-1")
        let plan = try #require(deployPlan.devices.first { $0.id == id })
        return (plan, try #require(matrix.device(id: id)), matrix)
    }
}
