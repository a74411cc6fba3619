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
        return context.fileSystem.fileExists(atPath: developer)
    }

    /// Runs `body`, calling `beat` with the time so far every `interval` until it returns.
    static func withHeartbeat<T: Sendable>(
        every interval: Duration, beat: @escaping @Sendable (Duration) -> Void,
        body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let start = ContinuousClock.now
        let ticker = Task {
            while true {
                try await Task.sleep(for: interval)
                try Task.checkCancellation()
                beat(ContinuousClock.now - start)
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

    /// The remote builder from devices.yaml (`build_host:`), resolved; nil when there is none.
    public var buildHostAddress: String? {
        guard let value = matrix.buildHost else { return nil }
        switch value.resolve(builder.variables) {
        case .value(let text): return text.isEmpty ? nil : text
        case .unset: return nil
        }
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

    public func build(_ plan: DeployPlan, report: @escaping @Sendable (String) -> Void) async throws
        -> [String: Artifact]
    {
        let flavours = plan.builds.filter(\.enabled).compactMap { matrix.flavour(named: $0.flavour) }
        let remoteFlavours = flavours.filter { !canBuild($0) }.map(\.name)
        let remote: RemoteBuildMachine?
        if !remoteFlavours.isEmpty {
            guard let address = buildHostAddress else {
                throw NoXcodeError(flavours: remoteFlavours, host: host)
            }
            remote = try remoteMachine(address: address)
        } else {
            remote = nil
        }
        guard !flavours.isEmpty else { return [:] }
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
        var groups: [String: [Flavour]] = [:]
        for flavour in flavours {
            let machine = remoteFlavours.contains(flavour.name) ? "remote" : "local"
            groups["\(machine) \(builder.developerDirectory(flavour) ?? "")", default: []].append(flavour)
        }
        let executor = BuildExecutor(context: context, builder: builder, root: context.currentDirectory)
        let heartbeat = self.heartbeat
        do {
            let artifacts = try await withThrowingTaskGroup(of: [String: Artifact].self) { group in
                for (_, members) in groups {
                    group.addTask {
                        var built: [String: Artifact] = [:]
                        for flavour in members {
                            let machine: any BuildMachine =
                                remoteFlavours.contains(flavour.name)
                                ? remote ?? local as any BuildMachine : local
                            let place: String = machine is RemoteBuildMachine ? " on " + machine.name : ""
                            let archs: String = flavour.archs.map(\.rawValue).joined(separator: "+")
                            report("build \(flavour.name): building (\(archs))\(place)…")
                            let outcome = try await Self.withHeartbeat(every: heartbeat) { elapsed in
                                report(
                                    "build \(flavour.name): still building\(place) (\(Self.minutes(elapsed)))"
                                )
                            } body: {
                                try await executor.build(
                                    flavour, on: machine,
                                    commands: plan.builds.first { $0.flavour == flavour.name }?.commands)
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
            await remote?.finish()
            return artifacts
        } catch {
            await remote?.finish()
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
