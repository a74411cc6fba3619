import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployVirtual
import Logging

/// What `plan` and `deploy` start from: the matrix, the variables, the version and the topology —
/// with the virtual twins running when `--virtual` asks for them, so the plan names their UDIDs.
struct PlanInputs {
    var workspace: Workspace
    var matrix: DeviceMatrix
    var variables: [String: String]
    var plan: DeployPlan
    var twins: VirtualTwinsRun?
    /// Held while the twins run (until this value is gone): one run per state folder.
    var stateLock: StateFolderLock?

    static func make(
        workspace: Workspace, arguments: DeployArguments, screenshots: Bool, deployID: String? = nil,
        host: HostPlatform? = nil
    ) async throws -> PlanInputs {
        let context = workspace.context
        let matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        let version = try await workspace.loadVersion(allowShallow: arguments.allowShallow)
        var topology = Topology.current(environment: context.environment)
        // `plan --as-host macos`: what a Mac would do, from Linux (the simulator builds included).
        if let host { topology.host = host }
        var twins: VirtualTwinsRun?
        var stateLock: StateFolderLock?
        if arguments.virtual {
            let devices = try TargetResolver(matrix: matrix).resolve(arguments.targets)
            // Before the twins touch the folder: a second run would reset the first one's twins.
            stateLock = try StateFolderLock.acquire(
                context.url(for: arguments.state), displayName: arguments.state,
                fileSystem: context.fileSystem)
            var logger = Logger(label: "hadeploy.virtual")
            logger.logLevel = context.environment["HADEPLOY_DEBUG"] == nil ? .critical : .debug
            let run = try await VirtualTwinsRun.start(
                matrix: matrix, devices: devices, variables: variables,
                stateDirectory: context.url(for: arguments.state), logger: logger, context: context)
            topology.virtual = run.twins
            twins = run
        }
        do {
            let plan = try DeployPlanner(matrix: matrix, variables: variables, topology: topology).plan(
                options: arguments.options(screenshots: screenshots), version: version,
                deployID: deployID ?? UUID().uuidString.lowercased())
            return PlanInputs(
                workspace: workspace, matrix: matrix, variables: variables, plan: plan, twins: twins,
                stateLock: stateLock)
        } catch {
            await twins?.stop()
            throw error
        }
    }
}
