import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployVirtual
import Logging
import Templating
import Versioning

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
        var matrix = try workspace.loadMatrix()
        // `--virtual --wifi-only`: every device reached through usbmuxd is a Wi-Fi device.
        if arguments.wifiOnly { matrix = VirtualMatrix.wifiOnly(matrix) }
        let (variables, dotEnv) = try workspace.loadVariables()
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
                stateDirectory: context.url(for: arguments.state), logger: logger, context: context,
                wifiOnly: arguments.wifiOnly)
            topology.virtual = run.twins
            twins = run
        }
        let state = context.url(for: arguments.state)
        // Where files and tools are, found now: the planner reads no files, the run none but the plan.
        var paths = workspace.hostPaths(
            stateDirectory: state, developerImages: twins?.developerImages, matrix: matrix,
            variables: variables)
        // `--as-host macos`: a Mac with the flavours' Xcodes, whatever this machine has.
        if host != nil { paths.installedDeveloperDirectories = nil }
        var options = arguments.options(screenshots: screenshots, token: try arguments.fileToken(context))
        if arguments.virtual
            && (arguments.noBuild || (HostPlatform.current == .linux && matrix.buildHost == nil))
            && arguments.artifact == nil && arguments.artifacts == nil
        {
            // Virtual twins without a build: demo bundles, generated when the run starts.
            options.artifacts = .demo(
                directory: state.appendingPathComponent("demo-apps").path,
                bundleID: variables["BUNDLE_ID"].flatMap { $0.isEmpty ? nil : $0 }
                    ?? "com.example.hadashboard")
        }
        do {
            let planner = DeployPlanner(
                matrix: matrix, variables: variables, topology: topology, paths: paths)
            let deployID = deployID ?? UUID().uuidString.lowercased()
            if arguments.artifact != nil || arguments.artifacts != nil {
                // Found and hashed before the plan is made, for the flavours its available devices use:
                // the plan names each flavour's file and its SHA-256 (the planner reads no files).
                let devices = try planner.plan(options: options, version: version, deployID: deployID).devices
                options.artifacts = try ArtifactPlan.files(
                    artifact: arguments.artifact.map { context.url(for: $0) },
                    directory: arguments.artifacts.map { context.url(for: $0) },
                    flavours: Array(Set(devices.filter { $0.availability == .available }.map(\.flavour))),
                    in: context.fileSystem)
            }
            options.project = try workspace.fingerprint(dotEnv: dotEnv, version: version)
            let plan = try planner.plan(options: options, version: version, deployID: deployID)
            return PlanInputs(
                workspace: workspace, matrix: matrix, variables: variables, plan: plan, twins: twins,
                stateLock: stateLock)
        } catch {
            await twins?.stop()
            throw error
        }
    }
}

extension Workspace {
    /// The version of the project here (`ProjectFingerprint`): what a plan file is checked against.
    func fingerprint(dotEnv: DotEnv, version: GitVersion) throws -> String {
        let yaml = try Data(contentsOf: context.url(for: configPath))
        return ProjectFingerprint.make(
            devicesYAML: yaml, dotEnvKeys: dotEnv.values.filter { !$0.value.isEmpty }.map(\.key),
            version: version)
    }
}
