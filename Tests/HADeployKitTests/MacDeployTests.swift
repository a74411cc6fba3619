import DeviceSpec
import Foundation
import HADeployCore
import HomeAssistant
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployDrivers
@testable import HADeployKit
@testable import HADeployReporting
@testable import Versioning

/// The `mac` device of the committed matrix, planned and deployed through the real pipeline and
/// evidence verifier. The macOS tools are FAKES (the scripted runner, see MacDriverTests); the
/// fake `open` stands in for the app: it appends a session to `~/Documents/ha-log.txt` in HALog's
/// format, as the unsandboxed Mac build does.
@Suite struct MacDeployTests {
    static let token = "eyJhbGciOiJIUzI1NiJ9.mac-deploy-\(UUID().uuidString)"
    static let variables = ["HA_SERVER": "http://ha.local:8123", "HA_TOKEN": token]

    static func plan(host: HostPlatform, targets: [String] = ["mac"], verify: Bool = true) throws
        -> DeployPlan
    {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: DriverTestPlans.root.appendingPathComponent("devices.yaml"),
            displayName: "devices.yaml")
        let version = GitVersion(
            marketingVersion: "1.2.5", buildNumber: 158, tag: "v1.2.5", commitsSinceTag: 0, dirty: false,
            shallow: false)
        return try DeployPlanner(matrix: matrix, variables: variables, topology: Topology(host: host))
            .plan(
                options: DeployOptions(targets: targets, verify: verify), version: version, deployID: "d-mac")
    }

    @Test func aMacHostPlansTheMacStepsAndLinuxSaysWhyNot() throws {
        let mac = try #require(try Self.plan(host: .macOS).devices.first)
        #expect(mac.backend.kind == MacBackend.kind)
        #expect(mac.availability == .available)
        #expect(mac.steps.map(\.id) == [.connect, .install, .launch, .verify, .crashCheck])
        let launch = Backends.summary(of: .launch, for: mac, version: "1.0 (1)")
        #expect(
            launch.contains("defaults import") && launch.contains("stdin") && launch.contains("osascript"))
        #expect(Backends.summary(of: .install, for: mac, version: "1.0 (1)").contains("previous/"))
        #expect(mac.launchArguments.redacted.contains("***"))
        let build = try #require(try Self.plan(host: .macOS).builds.first)
        #expect(build.flavour == "mac" && build.sdk == "maccatalyst" && build.configuration == "Debug")

        let linux = try Self.plan(host: .linux)
        let device = try #require(linux.devices.first)
        #expect(device.steps.isEmpty)
        guard case .notOnThisHost(let reason) = device.availability else {
            Issue.record("available on Linux: \(device.availability)")
            return
        }
        #expect(reason.contains("Mac"))
        #expect(linux.builds.isEmpty, "nothing is built for a device this host cannot drive")
        // The old `deploy.sh all` deployed the Mac too.
        #expect(try Self.plan(host: .macOS, targets: ["all"]).devices.contains { $0.id == "mac" })
    }

    /// On virtual twins the Mac has none: its row says what it is (mac), not the twins' usbmuxd.
    @Test func aMacWithoutATwinIsReportedAsTheMacNotAsUSB() async throws {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            contentsOf: DriverTestPlans.root.appendingPathComponent("devices.yaml"),
            displayName: "devices.yaml")
        let twins = VirtualTwins(
            address: "UNIX:/tmp/v/usbmuxd.sock", udids: [:],
            unavailable: ["mac": "the Mac has no virtual twin"])
        let plan = try DeployPlanner(
            matrix: matrix, variables: [:], topology: Topology(host: .linux, virtual: twins)
        )
        .plan(
            options: DeployOptions(targets: ["mac"], verify: false),
            version: GitVersion(
                marketingVersion: "1.2.5", buildNumber: 158, tag: "v1.2.5", commitsSinceTag: 0, dirty: false,
                shallow: false), deployID: "d-virtual")
        let folder = try TemporaryFolder()
        let environment = DeployEnvironment(
            driver: { _ in
                MacDriver(
                    configuration: .init(label: "Mac", host: .linux, home: folder.url),
                    runner: FailingRunner(), fileSystem: FakeFileSystem(), clock: FakeClock())
            },
            verifier: nil, verificationSkippedReason: "--no-verify", artifacts: [:],
            reporter: PlainReporter(output: RecordingOutputSink(), clock: TestHost.clock),
            reportDirectory: nil,
            lockDirectory: folder.path("locks"), fileSystem: TestHost.fileSystem, clock: TestHost.clock,
            secrets: Self.variables)
        let report = await DeployExecutor(plan: plan, environment: environment).run()
        let result = try #require(report.results.first)
        #expect(result.outcome == .notAvailable)
        #expect(result.transport == "mac")
        let row = SummaryTable.render(report).split(separator: "\n")[1].split(separator: " ")
        #expect(row.prefix(3) == ["mac", "macOS", "mac"], "\(row)")
    }

    /// A Mac Catalyst bundle inspected by the one artifact reader.
    static func macArtifact(in folder: TemporaryFolder) throws -> Artifact {
        let build = folder.path("build/Debug-maccatalyst/HA Dashboard.app")
        try MacDriverTests.makeMacApp(at: build)
        // The reader wants a real Mach-O header: an arm64 one.
        var header = [UInt8](repeating: 0, count: 4096)
        header.replaceSubrange(0..<12, with: [0xCF, 0xFA, 0xED, 0xFE, 0x0C, 0x00, 0x00, 0x01, 0, 0, 0, 0])
        header[12] = 2
        try Data(header).write(to: build.appendingPathComponent("Contents/MacOS/HA Dashboard"))
        return try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(build, flavour: "mac")
    }

    static func session(_ lines: [String]) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return
            "\n=== HA Dashboard log session ===\nDevice: iPad / iOS 26.0\nDate: \(formatter.string(from: Date()))\n"
            + "Min level: INFO\n\n" + lines.joined(separator: "\n") + "\n"
    }

    static let loaded = session([
        "+     3.8ms  [startup] didFinishLaunching START",
        "+    58.3ms  INFO [startup] NSUserDefaults read END (url=YES, token=YES)",
        "+    75.2ms  INFO [startup] isConfigured=YES",
        "+   402.9ms  INFO [conn] WebSocket authenticated",
        "+   611.0ms  INFO [conn] Lovelace config received: 2 views, 5 cards, strategy=none",
    ])

    static let authFailed = session([
        "+    58.1ms  INFO [startup] NSUserDefaults read END (url=YES, token=YES)",
        "+    75.0ms  INFO [startup] isConfigured=YES",
        "+   401.0ms  WARN [conn] auth_invalid — attempting token refresh",
        "+   401.4ms ERROR [conn] Auth failed: Authentication failed",
    ])

    /// The whole deploy of the `mac` device with the fake tools: returns its result and the runner.
    func deploy(appWrites log: String, folder: TemporaryFolder) async throws -> (DeviceResult, ScriptedRunner)
    {
        let plan = try Self.plan(host: .macOS)
        let device = try #require(plan.devices.first)
        let home = folder.path("home")
        let artifact = try Self.macArtifact(in: folder)
        let installed = MacDriverTests.installed(home)
        let logFile = home.appendingPathComponent("Documents/ha-log.txt")
        let store = MacDriverTests.Store()
        let empty = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict/></plist>\n"
        let runner = ScriptedRunner(
            MacDriverTests.connectSteps() + [
                MacDriverTests.ditto(from: URL(fileURLWithPath: artifact.path)),
                MacDriverTests.quit(), MacDriverTests.running(false),
                MacDriverTests.export(empty), MacDriverTests.importing(into: store),
                // The stand-in app: started by `open`, it reads its settings and writes its log.
                MacDriverTests.open(installed) { _ in
                    #expect(store.plist["HAAccessToken"] as? String == Self.token)
                    try FileManager.default.createDirectory(
                        at: logFile.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data(log.utf8).write(to: logFile)
                },
            ])
        let driver = MacDriver(
            configuration: .init(
                label: device.name, host: .macOS, home: home,
                deadlines: DriverDeadlines(plan: device)),
            runner: runner, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
        let server = LoadEvidenceVerifierTests.Server(shapes: [
            "living-room": .shape(LovelaceShape(views: 2, cards: 5, strategy: nil))
        ])
        let environment = DeployEnvironment(
            driver: { _ in driver }, verifier: server, verificationSkippedReason: "",
            artifacts: ["mac": artifact],
            reporter: PlainReporter(output: RecordingOutputSink(), clock: TestHost.clock),
            reportDirectory: folder.path("report"), lockDirectory: folder.path("locks"),
            fileSystem: TestHost.fileSystem, clock: TestHost.clock, secrets: Self.variables)
        let report = await DeployExecutor(plan: plan, environment: environment).run()
        return (try #require(report.results.first), runner)
    }

    @Test func theAppsLogInTheHomeFolderVerifiesTheMac() async throws {
        let folder = try TemporaryFolder()
        let (result, runner) = try await deploy(appWrites: Self.loaded, folder: folder)
        #expect(result.outcome == .succeeded, "\(result.reason ?? "")")
        #expect(result.evidence?.contains(.appLog) == true)
        #expect(result.steps.map(\.name) == ["connect", "install", "launch", "verify", "crash_check"])
        #expect(runner.remaining == 0)
        for command in runner.received {
            #expect(!command.arguments.joined(separator: " ").contains(Self.token), "\(command)")
        }
    }

    @Test func anAuthFailureInTheLogFailsTheMacInTheAppsWords() async throws {
        let folder = try TemporaryFolder()
        let (result, _) = try await deploy(appWrites: Self.authFailed, folder: folder)
        #expect(result.outcome == .failed)
        #expect(result.failedStep == "verify")
        #expect(
            result.reason?.contains("Auth failed: Authentication failed") == true, "\(result.reason ?? "")")
    }

    /// An iOS build handed to the Mac (or the Mac build to an iPad) stops before anything runs.
    @Test func theWrongPlatformsAppFailsBeforeAnythingIsTouched() async throws {
        let folder = try TemporaryFolder()
        let plan = try Self.plan(host: .macOS, verify: false)
        let iOSApp = Artifact(
            path: "/builds/HA Dashboard.ipa", bundleID: "com.hadashboard.app", executable: "HA Dashboard",
            marketingVersion: "1.2.5", buildNumber: "158", flavour: "mac", archs: ["arm64"])
        let environment = DeployEnvironment(
            driver: { _ in
                MacDriver(
                    configuration: .init(label: "Mac", host: .macOS, home: folder.url),
                    runner: FailingRunner(), fileSystem: FakeFileSystem(), clock: FakeClock())
            },
            verifier: nil, verificationSkippedReason: "--no-verify", artifacts: ["mac": iOSApp],
            reporter: PlainReporter(output: RecordingOutputSink(), clock: TestHost.clock),
            reportDirectory: nil,
            lockDirectory: folder.path("locks"), fileSystem: TestHost.fileSystem, clock: TestHost.clock,
            secrets: Self.variables)
        let result = try #require(
            await DeployExecutor(plan: plan, environment: environment).run().results.first)
        #expect(result.outcome == .failed)
        #expect(result.failedStep == "install")
        #expect(result.reason?.contains("is an iOS app") == true)
        #expect(result.reason?.contains("nothing was touched") == true)
        #expect(result.steps.isEmpty)
    }
}
