import DeviceSpec
import Foundation
import HADeployCore
import Versioning

/// Builds every flavour a plan needs, once each: flavours sharing an Xcode run one after another,
/// different Xcodes side by side.
public struct BuildRunner: Sendable {
    public var context: HADeployContext
    public var matrix: DeviceMatrix
    public var builder: BuildCommandBuilder
    public var host: HostPlatform

    public init(
        context: HADeployContext, matrix: DeviceMatrix, builder: BuildCommandBuilder, host: HostPlatform
    ) {
        self.context = context
        self.matrix = matrix
        self.builder = builder
        self.host = host
    }

    /// Whether this host can run the builds at all (macOS with the flavour's Xcode, or tools
    /// pointed at explicitly through HADEPLOY_XCODEBUILD).
    public func canBuild(_ flavour: Flavour) -> Bool {
        if builder.tools["xcodebuild"] != nil { return true }
        guard host == .macOS else { return false }
        guard let developer = builder.developerDirectory(flavour) else { return true }
        return FileManager.default.fileExists(atPath: developer)
    }

    public func build(_ plan: DeployPlan, report: @escaping @Sendable (String) -> Void) async throws
        -> [String: Artifact]
    {
        let flavours = plan.builds.filter(\.enabled).compactMap { matrix.flavour(named: $0.flavour) }
        let missing = flavours.filter { !canBuild($0) }.map(\.name)
        if !missing.isEmpty { throw NoXcodeError(flavours: missing, host: host) }
        // Group by Xcode: one build at a time per installation.
        var groups: [String: [Flavour]] = [:]
        for flavour in flavours {
            groups[builder.developerDirectory(flavour) ?? "", default: []].append(flavour)
        }
        let executor = BuildExecutor(context: context, builder: builder, root: context.currentDirectory)
        return try await withThrowingTaskGroup(of: [String: Artifact].self) { group in
            for (_, members) in groups {
                group.addTask {
                    var built: [String: Artifact] = [:]
                    for flavour in members {
                        report(
                            "build \(flavour.name): building (\(flavour.archs.map(\.rawValue).joined(separator: "+")))…"
                        )
                        let outcome = try await executor.build(flavour)
                        report(
                            "build \(flavour.name): \(outcome.cached ? "up to date, reusing" : "built") \(outcome.artifact.path)"
                        )
                        built[flavour.name] = outcome.artifact
                    }
                    return built
                }
            }
            var all: [String: Artifact] = [:]
            for try await part in group { all.merge(part) { a, _ in a } }
            return all
        }
    }
}
