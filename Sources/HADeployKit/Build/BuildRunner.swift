import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import Templating
import Versioning

/// Builds every flavour a plan needs, once each: flavours sharing an Xcode run one after another,
/// different Xcodes side by side.
public struct BuildRunner: Sendable {
    public var context: HADeployContext
    public var matrix: DeviceMatrix
    public var builder: BuildCommandBuilder
    public var host: HostPlatform
    /// How often a long build says it is still going (a real build takes minutes; a silent CI log
    /// looks hung).
    public var heartbeat: Duration = .seconds(60)

    /// The machine at a build host's address (`remoteMachine(address:)`; a test's own).
    public var buildHost: @Sendable (BuildRunner, String) throws -> any BuildMachine = {
        try $0.remoteMachine(address: $1)
    }

    public init(
        context: HADeployContext, matrix: DeviceMatrix, builder: BuildCommandBuilder, host: HostPlatform
    ) {
        self.context = context
        self.matrix = matrix
        self.builder = builder
        self.host = host
    }

    /// The developer folders of the flavours' Xcodes that exist here: what the planner decides each
    /// flavour's build location from (it reads no files itself).
    public static func installedDeveloperDirectories(
        matrix: DeviceMatrix, variables: [String: String], fileSystem: any FileSystem
    ) -> Set<String> {
        let builder = BuildCommandBuilder.resolved(variables: variables, version: .unversioned)
        return Set(
            matrix.flavours.compactMap(builder.developerDirectory).filter {
                fileSystem.fileExists(atPath: $0)
            })
    }

    /// Runs `body`, calling `beat` with the time so far every `interval` (of `clock`) until it returns.
    static func withHeartbeat<T: Sendable>(
        every interval: Duration, clock: any WallClock, beat: @escaping @Sendable (Duration) -> Void,
        body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let start = clock.instant()
        let ticker = Task {
            while true {
                try await clock.sleep(for: interval)
                try Task.checkCancellation()
                beat(clock.elapsed(since: start))
            }
        }
        // The ticker is awaited, not just cancelled: no beat may follow the build's end.
        do {
            let value = try await body()
            ticker.cancel()
            _ = await ticker.result
            return value
        } catch {
            ticker.cancel()
            _ = await ticker.result
            throw error
        }
    }

    /// `42 s` or `3 min 5 s`.
    static func minutes(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        return seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min \(seconds % 60) s"
    }

    /// The remote builder for the flavours this machine cannot build, logging in as `SSHLogin` says
    /// (`BUILD_HOST_SSH_KEY`, the agent, `~/.ssh` keys) and trusting only host keys in hadeploy's
    /// known_hosts.
    public func remoteMachine(address: String) throws -> RemoteBuildMachine {
        let variables = builder.variables
        var remoteTools: [String: String] = [:]
        for (tool, key) in [
            ("xcodebuild", "HADEPLOY_REMOTE_XCODEBUILD"), ("xcodegen", "HADEPLOY_REMOTE_XCODEGEN"),
        ] {
            if let value = variables[key], !value.isEmpty { remoteTools[tool] = value }
        }
        do {
            return try RemoteBuildMachine(
                address: address,
                authentication: SSHLogin.authentication(
                    keyVariable: "BUILD_HOST_SSH_KEY", variables: variables, fileSystem: context.fileSystem),
                knownHostsPath: SSHLogin.knownHostsPath(variables), localRoot: context.currentDirectory,
                runner: context.runner, fileSystem: context.fileSystem, localUser: context.system.userName,
                localTools: builder.tools, remoteTools: remoteTools)
        } catch {
            throw BuildHostError(address: address, reason: "\(error)")
        }
    }

    /// Renders `Templates/**/*.mustache` into `Generated/` (only changed files are written), so the
    /// build uses the spec of this `.env`. A repository without `Templates/` builds as it is.
    public func renderTemplates() throws {
        let templates = context.currentDirectory.appendingPathComponent("Templates")
        guard context.fileSystem.fileExists(atPath: templates.path) else { return }
        let files = try TemplateRenderer(
            fileSystem: context.fileSystem, templatesDirectory: templates,
            displayRoot: context.currentDirectory
        )
        .render(values: builder.variables)
        let generated = context.currentDirectory.appendingPathComponent("Generated")
        for file in files {
            _ = try FileWriter(fileSystem: context.fileSystem).write(
                Data(file.contents.utf8), to: generated.appendingPathComponent(file.relativePath))
        }
    }

    /// Builds the plan's enabled builds, each where the plan says (`BuildPlan.location`): this
    /// machine, the build host, or — when the plan found neither — nowhere, and nothing is built.
    public func build(_ plan: DeployPlan, report: @escaping @Sendable (String) -> Void) async throws
        -> [String: Artifact]
    {
        let builds = plan.builds.filter(\.enabled)
        let nowhere = builds.filter { $0.location == .nowhere }.map(\.flavour)
        if !nowhere.isEmpty { throw NoXcodeError(flavours: nowhere, host: host) }
        guard !builds.isEmpty else { return [:] }
        var machines: [String: any BuildMachine] = [:]
        for build in builds {
            guard case .buildHost(let address) = build.location, machines[address] == nil else { continue }
            machines[address] = try buildHost(self, address)
        }
        // One build at a time per checkout: two runs would write the same build directory here and
        // replace each other's source tree on the build host.
        let lock: DeviceLock
        do {
            let checkout = context.currentDirectory.standardizedFileURL.path
            lock = try DeviceLock.acquire(
                device: checkout, key: "build-" + BuildExecutor.sha256(Data(checkout.utf8)).prefix(16),
                directory: DeploySession.lockDirectory(context))
        } catch let busy as DeviceBusyError {
            throw BuildBusyError(checkout: busy.device, pid: busy.pid, lockFile: busy.lockFile)
        }
        defer { lock.release() }
        try renderTemplates()
        let local = LocalBuildMachine(
            runner: context.runner, root: context.currentDirectory, fileSystem: context.fileSystem)
        // Group by machine and Xcode: one build at a time per installation.
        var groups: [String: [(Flavour, BuildPlan)]] = [:]
        for build in builds {
            guard let flavour = matrix.flavour(named: build.flavour) else { continue }
            let machine: String
            if case .buildHost(let address) = build.location { machine = address } else { machine = "here" }
            groups["\(machine) \(builder.developerDirectory(flavour) ?? "")", default: []].append(
                (flavour, build))
        }
        let executor = BuildExecutor(context: context, builder: builder, root: context.currentDirectory)
        let heartbeat = self.heartbeat
        let remotes = machines
        do {
            let artifacts = try await withThrowingTaskGroup(of: [String: Artifact].self) { group in
                for (_, members) in groups {
                    group.addTask {
                        var built: [String: Artifact] = [:]
                        for (flavour, build) in members {
                            let remote: (any BuildMachine)? =
                                if case .buildHost(let address) = build.location { remotes[address] } else {
                                    nil
                                }
                            let machine: any BuildMachine = remote ?? local
                            let place = remote.map { " on " + $0.name } ?? ""
                            let archs: String = flavour.archs.map(\.rawValue).joined(separator: "+")
                            report("build \(flavour.name): building (\(archs))\(place)…")
                            let outcome = try await Self.withHeartbeat(every: heartbeat, clock: context.clock)
                            { elapsed in
                                report(
                                    "build \(flavour.name): still building\(place) (\(Self.minutes(elapsed)))"
                                )
                            } body: {
                                try await executor.build(flavour, on: machine, commands: build.commands)
                            }
                            let state: String = outcome.cached ? "up to date, reusing" : "built" + place + ","
                            report("build \(flavour.name): \(state) \(outcome.artifact.path)")
                            built[flavour.name] = outcome.artifact
                        }
                        return built
                    }
                }
                var all: [String: Artifact] = [:]
                for try await part in group { all.merge(part) { a, _ in a } }
                return all
            }
            for remote in remotes.values { await remote.finish() }
            return artifacts
        } catch {
            for remote in remotes.values { await remote.finish() }
            throw error
        }
    }
}

/// The `build_host:` address cannot be used.
public struct BuildHostError: Error, CustomStringConvertible, ExitStatusProviding {
    public var address: String
    public var reason: String

    public var description: String {
        "build_host \(address) in devices.yaml cannot be used: \(reason). Write it as "
            + "ssh://[user@]host[:port][/work/directory]."
    }

    public var exitStatus: ExitStatus { .config }
}

/// Another hadeploy is building in this checkout.
public struct BuildBusyError: Error, CustomStringConvertible, ExitStatusProviding {
    public var checkout: String
    public var pid: Int32
    public var lockFile: String

    public var description: String {
        "another hadeploy (pid \(pid)) is building in \(checkout); wait for it to finish and run again "
            + "(lock: \(lockFile))"
    }

    public var exitStatus: ExitStatus { .buildFailed }
}
