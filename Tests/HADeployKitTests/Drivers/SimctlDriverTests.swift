import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployDrivers
@testable import HADeployKit

enum TestApp {
    static let token = "FIXTURE-TOKEN-7f3a9c"
    static let arguments = [
        "-HAServerURL", "http://ha.local:8123", "-HAAccessToken", token, "-HADashboard", "Living room",
        "-HAKioskMode", "YES",
    ]
    /// `arguments` without the token: what may appear on a command line.
    static let publicArguments = [
        "-HAServerURL", "http://ha.local:8123", "-HADashboard", "Living room", "-HAKioskMode", "YES",
    ]

    /// The launch the planner makes for `arguments`: server, the token (read from the environment as
    /// the run does), dashboard, kiosk.
    static func launch(
        credentials: LaunchSettings.Credentials = .homeAssistant(
            server: .value("http://ha.local:8123"), token: SecretReference(environment: "HA_TOKEN")),
        token: String = TestApp.token, dashboard: DashboardTarget = .named("Living room"), kiosk: Bool? = true
    ) throws -> ResolvedLaunch {
        try ResolvedLaunch(
            LaunchSettings(
                credentials: credentials, dashboard: dashboard, kiosk: kiosk, autoRegister: false,
                appSettings: [:],
                deployID: nil, deviceID: nil),
            environment: ["HA_TOKEN": token])
    }

    static func artifact(path: String = "/work/build/simulator/HA Dashboard.app") -> Artifact {
        Artifact(
            path: path, bundleID: "com.example.hadashboard", executable: "HA Dashboard",
            marketingVersion: "1.4.0",
            buildNumber: "212", flavour: "simulator", archs: ["arm64"])
    }
}

@Suite struct SimctlDriverTests {
    let ipad = "3F8E2B71-6C0D-4A95-B1E4-8D7C2A9F0B33"

    func driver(
        _ runner: ScriptedRunner, host: HostPlatform = .macOS, folder: TemporaryFolder,
        type: String = "iPad (10th generation)"
    )
        -> SimctlDriver
    {
        SimctlDriver(
            configuration: .init(
                label: "iPad simulator",
                selector: SimulatorSelector(udid: nil, deviceType: type, runtime: "iOS 17.5"),
                host: host, commands: SimctlCommands(), launchEnvironment: ["HADEPLOY_DEPLOY_ID": "d-42"],
                simulatorDevices: folder.path("Devices"), diagnosticReports: folder.path("DiagnosticReports"),
                scratchDirectory: folder.path("scratch")),
            runner: runner, fileSystem: TestHost.fileSystem)
    }

    func list() throws -> ScriptedRunner.Step {
        .init(
            executable: "xcrun", arguments: ["simctl", "list", "-j", "devices"],
            stdout: try AppleFixture.text("simctl-list-devices.json"))
    }

    /// What simctl answers for an app that is not installed (Xcode 16).
    func notInstalled() -> ScriptedRunner.Step {
        .init(
            executable: "xcrun",
            arguments: ["simctl", "get_app_container", ipad, "com.example.hadashboard", "app"],
            status: 2,
            stderr:
                "An error was encountered processing the command (domain=NSPOSIXErrorDomain, code=2):\n"
                + "No such file or directory\n")
    }

    /// The token reaches the app through cfprefsd (`defaults import` on stdin), merged with the app's
    /// own settings — never through simctl's argv, which any local user can read.
    func exportDefaults() -> ScriptedRunner.Step {
        .init(
            executable: "xcrun",
            arguments: ["simctl", "spawn", ipad, "defaults", "export", "com.example.hadashboard", "-"],
            stdout: """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>HAThemeMode</key><integer>2</integer></dict></plist>
                """)
    }

    func importDefaults() -> ScriptedRunner.Step {
        .init(
            executable: "xcrun",
            arguments: ["simctl", "spawn", ipad, "defaults", "import", "com.example.hadashboard", "-"],
            effect: { command in
                let input = try #require(command.standardInput)
                let plist = try #require(
                    try PropertyListSerialization.propertyList(from: input, format: nil) as? [String: Any])
                #expect(plist["HAAccessToken"] as? String == TestApp.token)
                #expect(plist["HAThemeMode"] as? Int == 2, "the app's other settings are kept")
                #expect(!command.description.contains(TestApp.token))
            })
    }

    /// A small .app bundle on disk (the installed copy, or the artifact).
    func makeApp(at url: URL, executable: String = "binary v1") throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(executable.utf8).write(to: url.appendingPathComponent("HA Dashboard"))
        try Data("<plist/>".utf8).write(to: url.appendingPathComponent("Info.plist"))
    }

    @Test func theSameBundleIsNotInstalledAgainButAnyDifferenceOrForceIs() async throws {
        let folder = try TemporaryFolder()
        let artifact = folder.path("build/HA Dashboard.app")
        try makeApp(at: artifact)
        let installedCopy = folder.path("Containers/Bundle/Application/0A1B/HA Dashboard.app")
        try makeApp(at: installedCopy)
        let container = ScriptedRunner.Step(
            executable: "xcrun",
            arguments: ["simctl", "get_app_container", ipad, "com.example.hadashboard", "app"],
            stdout: installedCopy.path + "\n")
        let install = ScriptedRunner.Step(
            executable: "xcrun", arguments: ["simctl", "install", ipad, artifact.path])
        let runner = ScriptedRunner([
            try list(),
            container,  // identical: nothing to do
            container, install,  // the installed copy differs by one file
            install,  // --force: no question asked
        ])
        let sim = driver(runner, folder: folder)
        _ = try await sim.connect()
        let app = TestApp.artifact(path: artifact.path)
        let progress = ProgressLog()
        #expect(try await sim.install(app, force: false) { progress.add($0) } == .unchanged)
        #expect(progress.percents == [100])

        try makeApp(at: installedCopy, executable: "binary v2")
        #expect(try await sim.install(app, force: false) { _ in } == .installed)
        #expect(try await sim.install(app, force: true) { _ in } == .installed)
        #expect(runner.remaining == 0)
    }

    @Test func installThenLaunchBootsTheSimulatorFoundByNameAndRuntimeFirst() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            try list(),
            .init(executable: "xcrun", arguments: ["simctl", "boot", ipad]),
            .init(
                executable: "xcrun", arguments: ["simctl", "bootstatus", ipad, "-b"],
                stdout: "Device already booted\n"),
            notInstalled(),
            .init(
                executable: "xcrun",
                arguments: ["simctl", "install", ipad, "/work/build/simulator/HA Dashboard.app"]),
            exportDefaults(),
            importDefaults(),
            .init(
                executable: "xcrun",
                arguments: [
                    "simctl", "launch", "--terminate-running-process", ipad, "com.example.hadashboard",
                ] + TestApp.publicArguments,
                stdout: "com.example.hadashboard: 4242\n"),
            exportDefaults(),
            importDefaults(),
            .init(
                executable: "xcrun",
                arguments: [
                    "simctl", "launch", "--terminate-running-process", ipad, "com.example.hadashboard",
                ] + TestApp.publicArguments,
                status: 4,
                stderr:
                    "An error was encountered processing the command (domain=FBSOpenApplicationServiceErrorDomain, code=4):\n"
                    + "The request to open \"com.example.hadashboard\" failed.\nLaunch arguments: -HAAccessToken \(TestApp.token)\n"
            ),
        ])
        let sim = driver(runner, folder: folder)
        let connected = try await sim.connect()
        #expect(connected.udid == ipad)
        #expect(connected.name == "iPad (10th generation)")
        #expect(connected.iosVersion == "17.5")
        try await sim.prepare()
        let progress = ProgressLog()
        #expect(try await sim.install(TestApp.artifact(), force: false) { progress.add($0) } == .installed)
        #expect(progress.percents == [0, 100])
        try await sim.launch(TestApp.artifact(), settings: try TestApp.launch())

        let launch = runner.received[7]
        #expect(launch.environment["SIMCTL_CHILD_HADEPLOY_DEPLOY_ID"] == "d-42")
        #expect(!launch.description.contains(TestApp.token))

        await #expect {
            try await sim.launch(TestApp.artifact(), settings: try TestApp.launch())
        } throws: { error in
            let text = "\(error)"
            return !text.contains(TestApp.token) && text.contains("***")
                && text.hasPrefix("iPad simulator: launch: ")
                && text.contains("FBSOpenApplicationServiceErrorDomain")
        }
        #expect(runner.remaining == 0)
        #expect(runner.timeouts.allSatisfy { $0 > .zero && $0 <= .seconds(600) })
    }

    @Test func aBootedSimulatorIsOnlyWaitedFor() async throws {
        let folder = try TemporaryFolder()
        let iphone = "C1D4A8E5-2B6F-4E19-9A03-5F7B8C2D1E64"
        let runner = ScriptedRunner([
            try list(), .init(executable: "xcrun", arguments: ["simctl", "bootstatus", iphone, "-b"]),
        ])
        let sim = driver(runner, folder: folder, type: "iPhone 15 Pro")
        try await sim.prepare()
        #expect(runner.remaining == 0)
    }

    @Test func screenshotIsReadBackAndTheFileRemoved() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            try list(),
            .init(
                executable: "xcrun", arguments: ["simctl", "io", ipad, "screenshot", ScriptedRunner.any],
                effect: AppleFixture.writesPNG),
        ])
        let png = try await driver(runner, folder: folder).screenshot()
        #expect(png.starts(with: ScreenshotFile.pngSignature))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path("scratch").path).isEmpty)
    }

    @Test func crashReportsOfThisSimulatorAfterTheLaunch() async throws {
        let folder = try TemporaryFolder()
        let reports = folder.path("DiagnosticReports")
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
        let name = "HA Dashboard-2025-06-02-102031.ips"
        try FileManager.default.copyItem(at: AppleFixture.url(name), to: reports.appendingPathComponent(name))
        let runner = ScriptedRunner([try list()])
        let found = try await driver(runner, folder: folder).crashReports(
            of: TestApp.artifact(), since: Date(timeIntervalSince1970: 1_748_859_600),
            into: folder.path("crashes"))
        #expect(found == [folder.path("crashes").appendingPathComponent(name)])
    }

    @Test func onLinuxItSaysSimctlNeedsMacOSWithoutRunningAnything() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([])
        await #expect {
            try await driver(runner, host: .linux, folder: folder).connect()
        } throws: { error in
            "\(error)"
                == "iPad simulator: connect: xcrun simctl is part of Xcode and only runs on macOS; this host is Linux "
                + "— deploy this device from a Mac with Xcode, or leave it out of the targets on this host"
        }
        #expect(runner.received.isEmpty)
    }

    @Test func xcrunWithoutSimctlSaysInstallXcode() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: "xcrun", arguments: ["simctl", "list", "-j", "devices"], status: 72,
                stderr: "xcrun: error: unable to find utility \"simctl\", not a developer tool or in PATH\n")
        ])
        await #expect {
            try await driver(runner, folder: folder).connect()
        } throws: { error in
            let error = error as? AppleDriverError
            return error?.kind == .toolMissing && error?.fix?.contains("install Xcode") == true
                && error?.reason.contains("xcrun cannot find simctl") == true
        }
    }

    @Test func aMissingSimulatorSaysHowToCreateOne() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([try list()])
        await #expect {
            try await driver(runner, folder: folder, type: "iPad Air 13-inch (M2)").connect()
        } throws: { error in
            "\(error)".contains("no iPad Air 13-inch (M2) simulator on iOS 17.5")
                && "\(error)".contains("xcrun simctl create 'iPad Air 13-inch (M2)'")
        }
    }

    @Test func makeReadsTheMatrix() throws {
        let plan = try DriverTestPlans.plan("sim", variables: ["HOME": "/Users/dev"])
        let driver = try #require(
            try DriverRegistry(
                host: .macOS, environment: [:], runner: ScriptedRunner([]), fileSystem: FakeFileSystem(),
                clock: FakeClock()
            ).driver(
                for: plan.plan)
                as? SimctlDriver)
        #expect(
            driver.configuration.selector
                == SimulatorSelector(udid: nil, deviceType: "iPad (10th generation)", runtime: "iOS 17.5"))
        #expect(driver.configuration.commands.developerDir == "/Applications/Xcode.app/Contents/Developer")
        #expect(driver.configuration.diagnosticReports.path == "/Users/dev/Library/Logs/DiagnosticReports")
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [TransferProgress] = []
    func add(_ item: TransferProgress) { lock.withLock { items.append(item) } }
    var percents: [Int] { lock.withLock { items.map(\.percent) } }
}
