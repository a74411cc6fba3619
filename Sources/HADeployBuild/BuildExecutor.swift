import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import HostCrypto
import MobileDevice
import Versioning
import ZIPFoundation

/// A build that failed: the first compiler errors, not the whole log.
public struct BuildFailure: Error, CustomStringConvertible, ExitStatusProviding {
    public var flavour: String
    public var reason: String
    public var errors: [String]
    public var logPath: String?

    public var description: String {
        var lines = ["build of flavour \(flavour) failed: \(reason)"]
        lines += errors.map { "  \($0)" }
        if let logPath { lines.append("full log: \(logPath)") }
        return lines.joined(separator: "\n")
    }

    public var exitStatus: ExitStatus { .buildFailed }

    /// Where the build ran (this checkout, and the tree on a build host): compiler paths under one of
    /// them are shown relative to the repository.
    public var sourceRoots: [String] = []
}

extension BuildFailure: LocatedProblems {
    /// The compiler errors (`/abs/path/File.swift:12:5: error: message`), each at its place in the
    /// repository, so CI can annotate the line.
    public var locatedProblems: [(location: SourceLocation, message: String)] {
        errors.compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
            guard parts.count == 5, let row = Int(parts[1]), let column = Int(parts[2]),
                parts[3] == " error"
            else { return nil }
            var file = String(parts[0])
            for root in sourceRoots where file.hasPrefix(root + "/") {
                file = String(file.dropFirst(root.count + 1))
                break
            }
            return (
                SourceLocation(file: file, line: row, column: column),
                parts[4].trimmingCharacters(in: .whitespaces)
            )
        }
    }
}

/// Runs one flavour's build plan: xcodegen (only when the rendered spec changed), xcodebuild, slice
/// check, `.ipa` packaging, and a cache keyed by everything that goes into the build.
public struct BuildExecutor: Sendable {
    public var context: HADeployContext
    public var builder: BuildCommandBuilder
    /// The app repository root.
    public var root: URL
    public var timeout: Duration

    public init(
        context: HADeployContext, builder: BuildCommandBuilder, root: URL, timeout: Duration = .seconds(3600)
    ) {
        self.context = context
        self.builder = builder
        self.root = root
        self.timeout = timeout
    }

    public struct Outcome: Sendable {
        public var artifact: Artifact
        public var cached: Bool
        public var logPath: String
    }

    struct Record: Codable {
        var key: String
        var artifact: Artifact
        var contentHash: String
    }

    /// Builds `flavour` on this machine.
    public func build(_ flavour: Flavour, appName: String = "HADashboard") async throws -> Outcome {
        try await build(
            flavour,
            on: LocalBuildMachine(runner: context.runner, root: root, fileSystem: context.fileSystem),
            appName: appName)
    }

    /// Builds `flavour` on `machine` (here, or a remote macOS builder): the same plan either way. Logs,
    /// the cache record and the packaged artifact always land here, under the local build directory.
    /// `commands` are the plan's (`BuildPlan.commands`: XcodeGen, then xcodebuild or the script), run as they are;
    /// nil builds them here from the flavour.
    public func build(
        _ flavour: Flavour, on machine: any BuildMachine, commands: [ProcessCommand]? = nil,
        appName: String = "HADashboard"
    ) async throws -> Outcome {
        let xcodegen = commands?.first ?? builder.xcodegen(flavour)
        // The app's own script (`script:`) or xcodebuild.
        let buildStep =
            commands.flatMap { $0.count > 1 ? $0[1] : nil } ?? builder.script(flavour)
            ?? builder.xcodebuild(flavour)
        let relative = "\(builder.buildDirectory)/\(flavour.name)"
        let directory = root.appendingPathComponent(relative)
        try context.fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        let logURL = directory.appendingPathComponent("build.log")
        let recordURL = directory.appendingPathComponent("artifact.json")

        let key = try await cacheKey(flavour, on: machine)
        if let data = context.fileSystem.contents(atPath: recordURL.path),
            let record = try? JSONDecoder().decode(Record.self, from: data), record.key == key,
            context.fileSystem.fileExists(atPath: record.artifact.path)
        {
            return Outcome(artifact: record.artifact, cached: true, logPath: logURL.path)
        }
        do {
            try await machine.prepare()
        } catch let error as BuildFailure {
            throw error
        } catch {
            throw BuildFailure(
                flavour: flavour.name, reason: "preparing \(machine.name): \(SystemErrorText.message(error))",
                errors: [], logPath: nil
            )
        }

        // XcodeGen only when the rendered spec changed since the last generate there.
        let spec = root.appendingPathComponent("Generated/project.yml")
        let specHash = Self.sha256(context.fileSystem.contents(atPath: spec.path) ?? Data())
        let stamp = "\(relative)/xcodegen.stamp"
        let stamped = try await machine.read(stamp).map { String(decoding: $0, as: UTF8.self) }
        let projectExists = try await machine.exists(builder.project)
        if stamped != specHash || !projectExists {
            let output = try await run(xcodegen, on: machine, flavour: flavour, timeout: .seconds(300))
            guard output.status == 0 else {
                throw BuildFailure(
                    flavour: flavour.name,
                    reason: "xcodegen exited with status \(output.status) on \(machine.name)",
                    errors: Self.firstErrors(output.stdout + output.stderr), logPath: nil)
            }
            try await machine.write(Data(specHash.utf8), to: stamp)
        }

        let tool = flavour.script ?? "xcodebuild"
        let step = try await Self.freshResultBundle(buildStep, on: machine)
        let output = try await run(step, on: machine, flavour: flavour, timeout: timeout)
        try (output.standardOutput + output.standardError).write(to: logURL)
        guard output.status == 0 else {
            var failure = BuildFailure(
                flavour: flavour.name,
                reason: "\(tool) exited with status \(output.status) on \(machine.name)",
                errors: Self.firstErrors(output.stdout + "\n" + output.stderr), logPath: logURL.path)
            // Compilers print resolved paths (/private/tmp on macOS): offer both spellings.
            let here = [
                root.standardizedFileURL.path, root.resolvingSymlinksInPath().path, RealPath.of(root.path),
            ]
            .compactMap { $0 }
            failure.sourceRoots = here + [await machine.sourcePath()].compactMap { $0 }
            throw failure
        }

        let productsPath: String
        if flavour.script != nil {
            productsPath = try await scriptProduct(output.stdout, on: machine, flavour: flavour, log: logURL)
        } else {
            productsPath =
                "\(relative)/DerivedData/Build/Products/\(flavour.configuration)-\(flavour.sdk)/\(appName).app"
        }
        guard try await machine.exists(productsPath) else {
            throw BuildFailure(
                flavour: flavour.name,
                reason: "\(tool) succeeded but \(productsPath) does not exist on \(machine.name)",
                errors: [], logPath: logURL.path)
        }
        let products: URL
        do {
            products = try await machine.fetch(
                productsPath, into: directory.appendingPathComponent("fetched"))
        } catch {
            throw BuildFailure(
                flavour: flavour.name,
                reason: "fetching \(appName).app from \(machine.name): \(SystemErrorText.message(error))",
                errors: [], logPath: logURL.path)
        }
        var artifact = try ArtifactInspector(fileSystem: context.fileSystem).inspect(
            products, flavour: flavour.name)
        let expected = Set(flavour.archs.map(\.rawValue))
        guard Set(artifact.archs) == expected else {
            throw BuildFailure(
                flavour: flavour.name,
                reason:
                    "the binary has slices \(artifact.archs.joined(separator: "+")) but flavour \(flavour.name) needs "
                    + flavour.archs.map(\.rawValue).joined(separator: "+"), errors: [], logPath: logURL.path)
        }
        let versioned = "\(appName)-\(builder.version.marketingVersion)-\(builder.version.buildNumber)"
        let hash: String
        if flavour.sdk == "iphoneos" {
            let ipa = directory.appendingPathComponent(versioned + ".ipa")
            try Self.packageIPA(app: products, to: ipa, in: context.fileSystem)
            artifact.path = ipa.path
            hash = Self.sha256(try Data(contentsOf: ipa, options: .mappedIfSafe))
        } else {
            // Simulators and the Mac take the .app itself: a copy under a versioned folder (its own
            // name unchanged, the Mac shows it), so the next build does not change a cached one; a
            // local product stays in DerivedData for incremental builds.
            let kept = directory.appendingPathComponent(versioned).appendingPathComponent(
                products.lastPathComponent)
            try? context.fileSystem.removeItem(at: kept.deletingLastPathComponent())
            try context.fileSystem.createDirectory(
                at: kept.deletingLastPathComponent(), withIntermediateDirectories: true)
            try context.fileSystem.copyItem(at: products, to: kept)
            artifact.path = kept.path
            hash = try ContentHasher.hash(of: kept, isDirectory: true, in: context.fileSystem)
        }
        let record = Record(key: key, artifact: artifact, contentHash: hash)
        try FileWriter(fileSystem: context.fileSystem).write(try JSONEncoder().encode(record), to: recordURL)
        return Outcome(artifact: artifact, cached: false, logPath: logURL.path)
    }

    /// Runs one command of the plan on `machine`; a transport failure (not the tool's own exit status)
    /// becomes a build failure naming the machine.
    func run(_ command: ProcessCommand, on machine: any BuildMachine, flavour: Flavour, timeout: Duration)
        async throws -> ProcessOutput
    {
        do {
            return try await machine.run(try await machine.adapt(command), timeout: timeout)
        } catch let error as BuildFailure {
            throw error
        } catch {
            throw BuildFailure(
                flavour: flavour.name,
                reason: "\((command.executable as NSString).lastPathComponent) on \(machine.name): \(error)",
                errors: [], logPath: nil)
        }
    }

    /// The `.app` a build script printed as its last line, relative to the repository root there
    /// (scripts print absolute paths under their own project directory).
    func scriptProduct(_ stdout: String, on machine: any BuildMachine, flavour: Flavour, log: URL)
        async throws
        -> String
    {
        let printed =
            stdout.split(whereSeparator: \.isNewline).last.map {
                $0.trimmingCharacters(in: .whitespaces)
            } ?? ""
        guard printed.hasSuffix(".app") || printed.hasSuffix(".app/") else {
            throw BuildFailure(
                flavour: flavour.name,
                reason: "\(flavour.script ?? "the build script") succeeded but its last line of output is "
                    + "'\(printed)', not the path of the built .app (print it last, on stdout)",
                errors: [], logPath: log.path)
        }
        let path = printed.hasSuffix("/") ? String(printed.dropLast()) : printed
        guard path.hasPrefix("/") else { return path }
        let roots = [
            await machine.sourcePath(), root.standardizedFileURL.path, root.resolvingSymlinksInPath().path,
            RealPath.of(root.path),
        ]
        .compactMap { $0 }
        for base in roots where path.hasPrefix(base + "/") {
            return String(path.dropFirst(base.count + 1))
        }
        throw BuildFailure(
            flavour: flavour.name,
            reason: "\(flavour.script ?? "the build script") built \(path), outside the repository on "
                + "\(machine.name); write the .app under the repository (hadeploy fetches it from there)",
            errors: [], logPath: log.path)
    }

    /// Source tree, uncommitted changes, flavour settings, version and Xcode version.
    func cacheKey(_ flavour: Flavour, on machine: any BuildMachine) async throws -> String {
        func git(_ arguments: [String]) async throws -> String {
            try await context.runner.checked(
                ProcessCommand("git", ["-C", root.path] + arguments), timeout: .seconds(60)
            ).stdout
        }
        // The source tree as it is on disk: every tracked and untracked (not ignored) file, hashed by
        // content. git's own diff trusts its stat cache, which can miss a same-size edit made within
        // the second of the last index write.
        let listing = try await git(["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        let tree = SHA256Hasher()
        // hadeploy's own build outputs are never inputs, even where .gitignore forgets them.
        let outputs =
            builder.buildDirectory.split(separator: "/").first.map { String($0) + "/" } ?? ".hadeploy/"
        for path in Set(listing.split(separator: "\0").map(String.init)).sorted()
        where !path.hasPrefix(outputs) {
            tree.update(Data(path.utf8))
            if let contents = try? Data(contentsOf: root.appendingPathComponent(path), options: .mappedIfSafe)
            {
                tree.update(contents)
            }
        }
        let sources = tree.finalizeHex()
        var xcode = ""
        var version = ProcessCommand(builder.tools["xcodebuild"] ?? "xcodebuild", ["-version"])
        version.environment = builder.xcodebuild(flavour).environment
        version = try await machine.adapt(version)
        if let output = try? await machine.query(version, timeout: .seconds(60)), output.status == 0 {
            xcode = output.stdout
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let settings = String(decoding: try encoder.encode(flavour), as: UTF8.self)
        let text = [sources, settings, builder.version.description, xcode].joined(separator: "\u{1F}")
        return Self.sha256(Data(text.utf8))
    }

    public static func sha256(_ data: Data) -> String {
        SHA256Hasher.hex(of: data)
    }

    /// The first compiler-style errors of a log (`file:line:col: error: ...`), at most ten.
    static func firstErrors(_ log: String) -> [String] {
        var seen = Set<String>()
        return log.split(separator: "\n").map(String.init).filter {
            ($0.contains(": error: ") || $0.hasPrefix("error: ") || $0.contains("** BUILD FAILED **"))
                && seen.insert($0).inserted
        }.prefix(10).map { $0 }
    }

    static func packageIPA(app: URL, to ipa: URL, in fileSystem: any FileSystem) throws {
        let staging = ipa.deletingPathExtension().appendingPathExtension("payload")
        try? fileSystem.removeItem(at: staging)
        let payload = staging.appendingPathComponent("Payload")
        try fileSystem.createDirectory(at: payload, withIntermediateDirectories: true)
        try fileSystem.copyItem(at: app, to: payload.appendingPathComponent(app.lastPathComponent))
        try? fileSystem.removeItem(at: ipa)
        // ZIPFoundation writes the archive itself, at the path the file system gave the folders.
        try FileManager().zipItem(at: payload, to: ipa, shouldKeepParent: true)
        try? fileSystem.removeItem(at: staging)
    }
}

extension BuildExecutor {
    /// xcodebuild refuses a `-resultBundlePath` that exists ("Existing file at -resultBundlePath"),
    /// and the planned one is the same for every build at one build number: a failed build leaves
    /// it behind, and a retry, a dirty tree or a changed setting builds at the same number again.
    /// The command as planned when its bundle is free, else with the first free
    /// `<name>-2.xcresult`, `-3`… next to it (earlier bundles are kept for their logs).
    static func freshResultBundle(_ command: ProcessCommand, on machine: any BuildMachine) async throws
        -> ProcessCommand
    {
        guard let flag = command.arguments.firstIndex(of: "-resultBundlePath"),
            flag + 1 < command.arguments.count
        else { return command }
        let planned = command.arguments[flag + 1]
        guard try await machine.exists(planned) else { return command }
        let base = planned.hasSuffix(".xcresult") ? String(planned.dropLast(".xcresult".count)) : planned
        for attempt in 2...1000 {
            let candidate = "\(base)-\(attempt).xcresult"
            if try await !machine.exists(candidate) {
                var fresh = command
                fresh.arguments[flag + 1] = candidate
                return fresh
            }
        }
        return command
    }
}
