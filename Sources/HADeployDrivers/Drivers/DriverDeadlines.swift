import DeployModel
import Foundation
import HADeployCore

/// The deadlines a driver holds its own commands to: the plan's, step by step (what the pipeline
/// holds each step to, devices.yaml `timeouts:` already in them), so the tool is stopped by us with a
/// clear message rather than left running. A step the plan does not have (a launch under
/// `launch: false`) has the one default table's (`StepDeadlines`).
public struct DriverDeadlines: Sendable, Hashable {
    /// Each planned step's deadline.
    public var steps: [StepID: StepDeadline]
    /// Stopping the app before it is started again (a driver-internal step; `timeouts.terminate`).
    public var terminate: Duration
    /// devices.yaml's own `timeouts:` values, for the drivers whose tools take a value only when
    /// the user set one (the SSH and USB libraries' own defaults apply otherwise).
    var overrides: [StepID: Double]

    /// The plan's deadlines for `plan`'s device.
    public init(plan: DevicePlan) {
        var steps: [StepID: StepDeadline] = [:]
        for step in plan.steps { steps[step.id] = step.deadline }
        self.init(timeouts: plan.timeouts)
        self.steps.merge(steps) { _, planned in planned }
    }

    /// The deadlines devices.yaml's `timeouts:` give a device that is not planned (a rollback).
    public init(timeouts: [String: Double]) {
        var overrides: [StepID: Double] = [:]
        for (key, value) in timeouts {
            if let step = StepID(rawValue: key) { overrides[step] = value }
        }
        self.init(
            steps: Dictionary(
                uniqueKeysWithValues: StepID.allCases.map {
                    ($0, StepDeadlines.deadline($0, overrides: timeouts))
                }),
            terminate: timeouts[StepDeadlines.terminateKey].map { .checkedSeconds($0) }, overrides: overrides)
    }

    /// Deadlines given step by step (the rest: the default table's).
    public init(
        steps: [StepID: StepDeadline] = [:], terminate: Duration? = nil, overrides: [StepID: Double] = [:]
    ) {
        self.steps = steps
        self.terminate = terminate ?? .checkedSeconds(StepDeadlines.terminate)
        self.overrides = overrides
    }

    /// The deadline of `step` (an install's: its base; `install(bytes:)` sizes it to the app).
    public func limit(_ step: StepID) -> Duration {
        (steps[step] ?? StepDeadlines.deadline(step, overrides: [:])).duration(appBytes: 0)
    }

    /// An install's deadline for an app of `bytes`, as the plan sizes it.
    public func install(bytes: Int64) -> Duration {
        (steps[.install] ?? StepDeadlines.install).duration(appBytes: bytes)
    }

    /// The value devices.yaml's `timeouts:` gave `step`, or nil when it gave none.
    public func override(_ step: StepID) -> Double? { overrides[step] }

    /// The size of an `.ipa` file or an `.app` directory (its regular files), for sizing install deadlines.
    public static func size(of path: String, in fileSystem: any FileSystem) -> Int64 {
        guard fileSystem.fileExists(atPath: path) else { return 0 }
        if !fileSystem.isDirectory(atPath: path) {
            return ((try? fileSystem.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return fileSystem.allocatedSize(ofDirectory: URL(fileURLWithPath: path))
    }
}
