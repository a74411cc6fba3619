import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import Synchronization
import TestSupport
import Testing

@testable import HADeployBuild
@testable import HADeployKit
@testable import Versioning

/// The build executor running real processes: real git, and stand-in scripts for xcodebuild and
/// XcodeGen (which cannot run on Linux) that produce an app the way Xcode lays it out.
struct BuildExecutorTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures")

    func makeRepository() async throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-build-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("Generated"), withIntermediateDirectories: true)
        try "name: HADashboard\n".write(
            to: root.appendingPathComponent("Generated/project.yml"), atomically: true, encoding: .utf8)
        try "let x = 1\n".write(
            to: root.appendingPathComponent("App.swift"), atomically: true, encoding: .utf8)
        try ".hadeploy/\nHADashboard.xcodeproj/\nstandin.log\nSTANDIN_*\n".write(
            to: root.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
        try await GitRepository.commitAll(at: root)
        return root
    }

    func executor(root: URL) -> BuildExecutor {
        var builder = BuildCommandBuilder(
            variables: [
                "APPLE_TEAM_ID": "ABCDE12345", "ASC_KEY_ID": "KEYID", "ASC_ISSUER_ID": "ISS",
                "ASC_KEY_PATH": "/k.p8",
            ],
            version: GitVersion(
                marketingVersion: "1.10.0", buildNumber: 57, tag: "v1.10.0", commitsSinceTag: 0, dirty: false,
                shallow: false))
        builder.tools = [
            "xcodebuild": Self.fixtures.appendingPathComponent("xcodebuild-standin.py").path,
            "xcodegen": Self.fixtures.appendingPathComponent("xcodegen-standin.sh").path,
        ]
        let context = HADeployContext(
            environment: [:], runner: TestHost.runner, output: RecordingOutputSink(),
            currentDirectory: root, fileSystem: TestHost.fileSystem, clock: TestHost.clock,
            system: FakeEnvironment())
        return BuildExecutor(context: context, builder: builder, root: root, timeout: .seconds(60))
    }

    let legacy = Flavour(
        name: "legacy", xcode: ConfigValue("/Applications/Xcode-13.2.1.app"), archs: [.armv7, .arm64],
        deploymentTarget: "9.0", sdk: "iphoneos", configuration: "Legacy", scheme: nil, settings: [:],
        location: SourceLocation(file: "devices.yaml", line: 1))

    @Test func buildsPackagesAnIpaThenReusesTheCacheUntilTheSourceChanges() async throws {
        let root = try await makeRepository()
        let executor = executor(root: root)
        let first = try await executor.build(legacy)
        #expect(!first.cached)
        #expect(first.artifact.path.hasSuffix("HADashboard-1.10.0-57.ipa"))
        #expect(first.artifact.archs == ["armv7", "arm64"])
        #expect(first.artifact.marketingVersion == "1.10.0")
        let log = try String(contentsOf: root.appendingPathComponent("standin.log"), encoding: .utf8)
        #expect(log.contains("xcodegen generate --spec Generated/project.yml"))
        #expect(log.contains("ARCHS=armv7 arm64"))
        #expect(log.contains("CURRENT_PROJECT_VERSION=57"))

        let second = try await executor.build(legacy)
        #expect(second.cached)
        #expect(second.artifact.path == first.artifact.path)
        // XcodeGen is not run again for an unchanged spec.
        let runs =
            try String(contentsOf: root.appendingPathComponent("standin.log"), encoding: .utf8)
            .components(separatedBy: "xcodegen generate").count - 1
        #expect(runs == 1)

        try "let x = 2\n".write(
            to: root.appendingPathComponent("App.swift"), atomically: true, encoding: .utf8)
        let third = try await executor.build(legacy)
        #expect(!third.cached)
    }

    /// A machine standing in for the build host: the build runs in `root` through it, and it says
    /// that it did (no SSH peer is needed to see which machine the runner picked).
    final class StandInBuildHost: BuildMachine, @unchecked Sendable {
        let local: LocalBuildMachine
        let name: String
        private let lock = NSLock()
        private var commands: [String] = []
        init(_ local: LocalBuildMachine, name: String) {
            self.local = local
            self.name = name
        }
        var ran: [String] { lock.withLock { commands } }
        func prepare() async throws {}
        func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
            lock.withLock { commands.append((command.executable as NSString).lastPathComponent) }
            return try await local.run(command, timeout: timeout)
        }
        func query(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
            try await local.query(command, timeout: timeout)
        }
        func read(_ path: String) async throws -> Data? { try await local.read(path) }
        func write(_ data: Data, to path: String) async throws { try await local.write(data, to: path) }
        func exists(_ path: String) async throws -> Bool { try await local.exists(path) }
        func fetch(_ path: String, into localDirectory: URL) async throws -> URL {
            try await local.fetch(path, into: localDirectory)
        }
        func adapt(_ command: ProcessCommand) async throws -> ProcessCommand { command }
        func finish() async {}
        func sourcePath() async -> String? { await local.sourcePath() }
    }

    /// The runner builds where the plan says, and only there, although this machine has an
    /// xcodebuild (HADEPLOY_XCODEBUILD): the build host when the plan names it, nothing when the
    /// plan found no place.
    @Test func theRunnerBuildsWhereThePlanSays() async throws {
        let root = try await makeRepository()
        let base = executor(root: root)
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: """
                version: 1
                flavours:
                  legacy: {xcode: /Applications/Xcode-13.2.1.app, archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos, configuration: Legacy}
                devices:
                  ipad2: {product_type: "iPad2,1", ios: "9.3.5", arch: armv7, flavour: legacy, transport: usb, udid: U2}
                """, file: "devices.yaml")
        var runner = BuildRunner(context: base.context, matrix: matrix, builder: base.builder, host: .linux)
        let host = StandInBuildHost(
            LocalBuildMachine(runner: TestHost.runner, root: root, fileSystem: TestHost.fileSystem),
            name: "ssh://builder@mac-mini")
        runner.buildHost = { _, address in
            #expect(address == "ssh://builder@mac-mini")
            return host
        }
        func plan(_ location: BuildLocation) -> DeployPlan {
            DeployPlan(
                version: base.builder.version, deployID: "d", server: .unset(["HA_SERVER"]), verify: false,
                builds: [
                    BuildPlan(
                        flavour: "legacy", xcode: "13.2.1", archs: ["armv7", "arm64"],
                        deploymentTarget: "9.0",
                        sdk: "iphoneos", configuration: "Legacy", devices: ["ipad2"], enabled: true,
                        location: location, commands: base.builder.commands(legacy))
                ], devices: [], warnings: [])
        }
        let messages = Mutex<[String]>([])
        let remote = try await runner.build(plan(.buildHost("ssh://builder@mac-mini"))) { line in
            messages.withLock { $0.append(line) }
        }
        #expect(remote["legacy"] != nil)
        #expect(host.ran.contains("xcodebuild-standin.py"), "\(host.ran)")
        #expect(
            messages.withLock { $0 }.contains {
                $0.hasPrefix("build legacy: built on ssh://builder@mac-mini")
            })

        let before = host.ran.count
        let nowhere = await #expect(throws: NoXcodeError.self) {
            try await runner.build(plan(.nowhere)) { _ in }
        }
        #expect(nowhere?.flavours == ["legacy"])
        #expect(host.ran.count == before, "nothing more ran: \(host.ran)")
    }

    /// The Mac Catalyst build is found in `Debug-maccatalyst/`, read as a Mac bundle, and kept as
    /// the `.app` (an `.ipa` is for iOS devices).
    @Test func theMacFlavourIsTakenFromItsMacCatalystProductsAsAMacBundle() async throws {
        let root = try await makeRepository()
        let mac = Flavour(
            name: "mac", xcode: nil, archs: [.arm64], deploymentTarget: "", sdk: "maccatalyst",
            configuration: "Debug", scheme: nil, settings: [:],
            location: SourceLocation(file: "devices.yaml", line: 1))
        let outcome = try await executor(root: root).build(mac)
        #expect(outcome.artifact.platform == .macCatalyst)
        #expect(outcome.artifact.path.hasSuffix("/mac/HADashboard-1.10.0-57/HADashboard.app"))
        #expect(outcome.artifact.archs == ["arm64"])
        #expect(outcome.artifact.marketingVersion == "1.10.0")
        let log = try String(contentsOf: root.appendingPathComponent("standin.log"), encoding: .utf8)
        #expect(log.contains("-destination platform=macOS,variant=Mac Catalyst"))
        #expect(!log.contains("-sdk"))
        // The cached record keeps the platform.
        let again = try await executor(root: root).build(mac)
        #expect(again.cached && again.artifact.platform == .macCatalyst)
    }

    @Test func aCompileErrorShowsTheFirstErrorsAndTheLogNotTheWholeLog() async throws {
        let root = try await makeRepository()
        try "".write(to: root.appendingPathComponent("STANDIN_FAIL"), atomically: true, encoding: .utf8)
        await #expect {
            try await executor(root: root).build(legacy)
        } throws: { error in
            guard let failure = error as? BuildFailure else { return false }
            let text = "\(failure)"
            return failure.exitStatus == .buildFailed
                && text.contains("DashboardView.swift:12:5: error: cannot find 'kioskMode' in scope")
                && !text.contains("File1999.swift") && text.contains("build.log")
                && failure.locatedProblems.map(\.location.description) == [
                    "App/DashboardView.swift:12:5", "App/DashboardView.swift:30:9",
                ]
                && failure.errors.count <= 10
        }
    }

    /// xcodebuild refuses an existing `-resultBundlePath` (the stand-in does as it does), and every
    /// build at one build number plans the same one: before, the build after a failed one at the
    /// same commit failed on the failed build's bundle. Now each build gets a bundle of its own.
    @Test func aRebuildAtTheSameBuildNumberGetsAResultBundleOfItsOwn() async throws {
        let root = try await makeRepository()
        let fail = root.appendingPathComponent("STANDIN_FAIL")
        try "".write(to: fail, atomically: true, encoding: .utf8)
        await #expect(throws: BuildFailure.self) { try await executor(root: root).build(legacy) }
        let planned = ".hadeploy/build/legacy/legacy-57.xcresult"
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(planned).path))

        try FileManager.default.removeItem(at: fail)
        let outcome = try await executor(root: root).build(legacy)
        #expect(!outcome.cached)
        let log = try String(contentsOf: root.appendingPathComponent("standin.log"), encoding: .utf8)
        let bundles = log.split(separator: "\n").filter { $0.hasPrefix("build ") }.compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            return words.firstIndex(of: "-resultBundlePath").map { words[$0 + 1] }
        }
        #expect(bundles == [planned, ".hadeploy/build/legacy/legacy-57-2.xcresult"])
    }

    /// The app's own recipe (`scripts/build.sh device`): hadeploy passes the version in the
    /// environment, takes the .app from the script's last line, checks its slices and packages it.
    @Test func aFlavourMayDelegateToTheAppsBuildScript() async throws {
        let root = try await makeRepository()
        let standin = Self.fixtures.appendingPathComponent("xcodebuild-standin.py").path
        let script = """
            #!/bin/sh
            set -e
            echo "Version: $MARKETING_VERSION ($CURRENT_PROJECT_VERSION)" >&2
            echo "DEVELOPER_DIR=$DEVELOPER_DIR" >&2
            '\(standin)' build -derivedDataPath build/device -configuration Debug -sdk iphoneos \\
                "ARCHS=armv7 arm64" "MARKETING_VERSION=$MARKETING_VERSION" \\
                "CURRENT_PROJECT_VERSION=$CURRENT_PROJECT_VERSION" >&2
            echo "$(pwd)/build/device/Build/Products/Debug-iphoneos/HADashboard.app"

            """
        let url = root.appendingPathComponent("scripts/build.sh")
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try script.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        var flavour = legacy
        flavour.xcode = ConfigValue("/Applications/Xcode.app")
        flavour.configuration = "Debug"
        flavour.script = "scripts/build.sh device"

        let outcome = try await executor(root: root).build(flavour)
        #expect(outcome.artifact.archs == ["armv7", "arm64"])
        #expect(outcome.artifact.marketingVersion == "1.10.0")
        #expect(outcome.artifact.path.hasSuffix("HADashboard-1.10.0-57.ipa"))
        let log = try String(contentsOfFile: outcome.logPath, encoding: .utf8)
        #expect(log.contains("Version: 1.10.0 (57)"))
        #expect(log.contains("DEVELOPER_DIR=/Applications/Xcode.app/Contents/Developer"))
        let standinLog = try String(contentsOf: root.appendingPathComponent("standin.log"), encoding: .utf8)
        #expect(standinLog.contains("xcodegen generate"), "the project is generated first, as regen.sh did")

        // A script that does not end with the .app's path is a build failure that says so.
        try "#!/bin/sh\necho done\n".write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        try "let x = 3\n".write(
            to: root.appendingPathComponent("App.swift"), atomically: true, encoding: .utf8)
        await #expect {
            try await executor(root: root).build(flavour)
        } throws: { error in
            (error as? BuildFailure)?.exitStatus == .buildFailed
                && "\(error)".contains("its last line of output is 'done', not the path of the built .app")
        }
    }

    @Test func slicesThatDoNotMatchTheFlavourAreRefused() async throws {
        let root = try await makeRepository()
        try "arm64".write(to: root.appendingPathComponent("STANDIN_ARCHS"), atomically: true, encoding: .utf8)
        await #expect {
            try await executor(root: root).build(legacy)
        } throws: { error in
            "\(error)".contains("has slices arm64 but flavour legacy needs armv7+arm64")
        }
    }
}

/// A long build keeps saying it is alive, and stops saying so once it is done.
struct BuildHeartbeatTests {
    final class Beats: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Duration] = []
        func add(_ value: Duration) { lock.withLock { values.append(value) } }
        var count: Int { lock.withLock { values.count } }
        var all: [Duration] { lock.withLock { values } }
    }

    @Test func beatsWhileTheBuildRunsAndNeverAfter() async throws {
        let beats = Beats()
        let result = try await BuildRunner.withHeartbeat(every: .milliseconds(20), clock: TestHost.clock) {
            beats.add($0)
        } body: {
            // The "build" lasts until it has been reported alive twice (bounded: 120 s; the suite's
            // synchronous tests can hold both pool threads of a two-core machine for over 30 s, and
            // then this loop wakes past a shorter bound before the ticker runs at all).
            let deadline = ContinuousClock.now + .seconds(120)
            while beats.count < 2 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            return "built"
        }
        #expect(result == "built")
        let atReturn = beats.count
        #expect(atReturn >= 2)
        #expect(beats.all == beats.all.sorted(), "elapsed time only grows")
        try await Task.sleep(for: .milliseconds(200))
        #expect(beats.count == atReturn, "a finished build is not reported as still building")
        #expect(BuildRunner.minutes(.seconds(42)) == "42 s")
        #expect(BuildRunner.minutes(.seconds(185)) == "3 min 5 s")
    }
}
