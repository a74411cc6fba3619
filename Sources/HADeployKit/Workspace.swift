import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import Templating
import Versioning

/// The inputs every command starts from: devices.yaml, `.env` + environment, and the git version.
public struct Workspace: Sendable {
    public var context: HADeployContext
    public var configPath: String
    public var envFilePath: String

    public init(context: HADeployContext, configPath: String, envFilePath: String) {
        self.context = context
        self.configPath = configPath
        self.envFilePath = envFilePath
    }

    public func loadMatrix() throws -> DeviceMatrix {
        // An empty path would resolve to the working directory itself.
        guard !configPath.isEmpty else {
            throw TextFileError(path: "", reason: "--config is an empty path; give the path of devices.yaml")
        }
        return try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: context.url(for: configPath), displayName: configPath)
    }

    /// `.env` merged with the process environment (the environment wins). A missing `.env` is fine.
    public func loadVariables() throws -> (values: [String: String], dotEnv: DotEnv) {
        guard !envFilePath.isEmpty else {
            throw TextFileError(
                path: "", reason: "--env-file is an empty path; give the path of the .env file")
        }
        let dotEnv = try DotEnv.load(
            from: context.url(for: envFilePath), environment: context.environment, displayName: envFilePath)
        for warning in dotEnv.warnings { context.message("warning: \(warning)") }
        return (TemplateValues.merge(dotEnv: dotEnv, environment: context.environment), dotEnv)
    }

    public func loadVersion(allowShallow: Bool) async throws -> GitVersion {
        let resolution = try await GitVersionResolver(
            runner: context.runner, repository: context.currentDirectory
        )
        .resolve(allowShallow: allowShallow)
        for warning in resolution.warnings { context.message("warning: \(warning)") }
        return resolution.version
    }
}

extension Workspace {
    /// The release tag `v<marketingVersion>` of this checkout, where there is one: its annotation (the
    /// release notes; a lightweight tag has none) and, when `origin` is on GitHub, its release page.
    public func release(marketingVersion: String) async -> (notes: String?, url: String?)? {
        let tag = "v" + marketingVersion
        let directory = context.currentDirectory.path
        func git(_ arguments: [String]) async -> String? {
            guard
                let output = try? await context.runner.run(
                    ProcessCommand("git", arguments, workingDirectory: directory), timeout: .seconds(10)),
                output.status == 0
            else { return nil }
            return output.stdout
        }
        guard
            let found = await git([
                "for-each-ref", "--format=%(objecttype)%00%(contents)", "refs/tags/\(tag)",
            ]),
            !found.isEmpty
        else { return nil }
        let parts = found.split(separator: "\0", maxSplits: 1, omittingEmptySubsequences: false)
        let notes =
            parts.first == "tag" && parts.count == 2
            ? parts[1].trimmingCharacters(in: .whitespacesAndNewlines) : ""
        var url: String?
        if let origin = await git(["remote", "get-url", "origin"])?.trimmingCharacters(
            in: .whitespacesAndNewlines)
        {
            url = Self.gitHubRepository(origin).map { "https://github.com/\($0)/releases/tag/\(tag)" }
        }
        return (notes.isEmpty ? nil : notes, url)
    }

    /// `owner/name` of a GitHub remote URL (`https://github.com/o/n(.git)`, `git@github.com:o/n.git`).
    static func gitHubRepository(_ remote: String) -> String? {
        var path: Substring
        if remote.hasPrefix("git@github.com:") {
            path = remote.dropFirst("git@github.com:".count)
        } else if let url = URLComponents(string: remote), url.host == "github.com" {
            path = Substring(url.path.drop { $0 == "/" })
        } else {
            return nil
        }
        if path.hasSuffix(".git") { path = path.dropLast(4) }
        let parts = path.split(separator: "/")
        guard parts.count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) } })
        else { return nil }
        return parts.joined(separator: "/")
    }

    /// Where a run from this checkout keeps its files and finds its tools, for the planner.
    public func hostPaths(
        stateDirectory: URL, developerImages: URL?, matrix: DeviceMatrix, variables: [String: String]
    ) -> HostPaths {
        HostPaths(
            stateDirectory: stateDirectory.standardizedFileURL.path, home: NSHomeDirectory(),
            developerImages: developerImages.map { [$0.path] },
            installedDeveloperDirectories: BuildRunner.installedDeveloperDirectories(
                matrix: matrix, variables: variables, fileSystem: context.fileSystem))
    }

    /// Builds a plan's builds in this checkout (`DeploySession.Settings.build`).
    /// Each flavour's build commands as the planner writes them for this checkout (a plan file that
    /// builds must carry exactly these: `PlanFileLoader`).
    public func plannedBuildCommands(
        matrix: DeviceMatrix, variables: [String: String], version: GitVersion
    ) -> [String: [ProcessCommand]] {
        let commands = BuildCommandBuilder.resolved(variables: variables, version: version)
        return Dictionary(
            matrix.flavours.map { ($0.name, commands.commands($0)) }, uniquingKeysWith: { first, _ in first })
    }

    public func builder(matrix: DeviceMatrix, variables: [String: String]) -> DeploySession.Builder {
        let context = self.context
        return { plan, message in
            // What the planner marked: a flavour no device of which could take the build is not built.
            var plan = plan
            plan.builds = plan.builds.filter(\.deployable)
            return try await BuildRunner(
                context: context, matrix: matrix,
                builder: BuildCommandBuilder.resolved(variables: variables, version: plan.version),
                host: .current
            ).build(plan, report: message)
        }
    }
}
