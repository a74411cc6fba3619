import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import Versioning

/// A flavour `hadeploy build` built, and where its artifact is (copied into `--out` when given).
public struct BuiltFlavour: Sendable {
    public var flavour: String
    public var path: String
    public var artifact: Artifact
}

extension Workspace {
    /// `hadeploy build`: the plan's builds for the targets (or every device), optionally only some
    /// flavours, run as planned; the artifacts copied into an output folder when asked.
    public func build(
        matrix: DeviceMatrix, variables: [String: String], version: GitVersion, targets: [String],
        flavours: [String], out: URL?, report: @escaping @Sendable (String) -> Void
    ) async throws -> [BuiltFlavour] {
        let unknown = flavours.filter { matrix.flavour(named: $0) == nil }
        if !unknown.isEmpty {
            throw UnknownFlavourError(names: unknown, known: matrix.flavours.map(\.name))
        }
        let paths = HostPaths(
            installedDeveloperDirectories: BuildRunner.installedDeveloperDirectories(
                matrix: matrix, variables: variables, fileSystem: context.fileSystem))
        var plan = try DeployPlanner(
            matrix: matrix, variables: variables, topology: .current(environment: context.environment),
            paths: paths
        ).plan(
            options: DeployOptions(targets: targets.isEmpty ? ["all"] : targets), version: version,
            deployID: "build")
        if !flavours.isEmpty {
            plan.builds.removeAll { !flavours.contains($0.flavour) }
            if plan.builds.isEmpty {
                throw UnknownFlavourError(
                    names: flavours, known: [],
                    detail:
                        "no device of \(targets.isEmpty ? "the matrix" : targets.joined(separator: ", ")) "
                        + "uses flavour \(flavours.joined(separator: ", ")) on this host")
            }
        }
        let artifacts = try await BuildRunner(
            context: context, matrix: matrix,
            builder: BuildCommandBuilder.resolved(variables: variables, version: version), host: .current
        ).build(plan, report: report)
        var built: [BuiltFlavour] = []
        for (flavour, artifact) in artifacts.sorted(by: { $0.key < $1.key }) {
            var path = artifact.path
            if let out {
                let directory = out.appendingPathComponent(flavour)
                try context.fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
                let target = directory.appendingPathComponent((artifact.path as NSString).lastPathComponent)
                try? context.fileSystem.removeItem(at: target)
                try context.fileSystem.copyItem(at: URL(fileURLWithPath: artifact.path), to: target)
                path = target.path
            }
            built.append(BuiltFlavour(flavour: flavour, path: path, artifact: artifact))
        }
        return built
    }
}

/// `--flavour` names a flavour devices.yaml does not have (or no device here uses).
public struct UnknownFlavourError: Error, CustomStringConvertible, ExitStatusProviding {
    public var names: [String]
    public var known: [String]
    public var detail: String? = nil

    public var description: String {
        detail
            ?? "unknown flavour \(names.joined(separator: ", ")) (devices.yaml has \(known.joined(separator: ", ")))"
    }

    public var exitStatus: ExitStatus { .usage }
}
