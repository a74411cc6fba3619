import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployDrivers
@testable import HADeployKit

/// The Mac Catalyst app on this Mac. `sw_vers`, `uname -m` (as macOS prints it), `ditto`,
/// `defaults`, `osascript`, `killall` and `open` are macOS tools: these tests replay them through
/// the scripted runner (a FAKE of each tool), with the outputs and exit statuses the real tools
/// document — `osascript` prints `true`/`false` for `is running`, `killall` exits 1 with "No
/// matching processes belonging to you were found", `defaults export` writes an XML plist.
@Suite struct MacDriverTests {
    static let bundleID = "com.hadashboard.app"
    static let token = "eyJhbGciOiJIUzI1NiJ9.mac-driver-\(UUID().uuidString)"
    static let arguments = [
        "-HAServerURL", "http://ha.local:8123", "-HAAccessToken", token, "-HADashboard", "living-room",
    ]

    /// A Mac Catalyst bundle as Xcode lays it out: `Contents/Info.plist`, `Contents/MacOS/<exe>`.
    static func makeMacApp(at url: URL, executable: String = "binary v1") throws {
        let contents = url.appendingPathComponent("Contents")
        try FileManager.default.createDirectory(
            at: contents.appendingPathComponent("MacOS"), withIntermediateDirectories: true)
        let info: [String: Any] = [
            "CFBundleIdentifier": bundleID, "CFBundleExecutable": "HA Dashboard",
            "CFBundleShortVersionString": "1.2.5", "CFBundleVersion": "158",
            "CFBundleSupportedPlatforms": ["MacOSX"],
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: contents.appendingPathComponent("Info.plist"))
        try Data(executable.utf8).write(to: contents.appendingPathComponent("MacOS/HA Dashboard"))
    }

    static func artifact(_ path: URL, platform: AppPlatform = .macCatalyst) -> Artifact {
        Artifact(
            path: path.path, bundleID: bundleID, executable: "HA Dashboard", marketingVersion: "1.2.5",
            buildNumber: "158", flavour: "mac", archs: ["arm64"], platform: platform)
    }

    static func driver(_ runner: ScriptedRunner, home: URL, host: HostPlatform = .macOS) -> MacDriver {
        MacDriver(
            configuration: .init(
                label: "Mac (Mac Catalyst)", host: host, home: home, quitGrace: .milliseconds(300),
                pollInterval: .milliseconds(20)),
            runner: runner, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
    }

    // The fake tools, one step each.
    static func connectSteps(machine: String = "arm64") -> [ScriptedRunner.Step] {
        [
            .init(executable: "sw_vers", arguments: ["-productVersion"], stdout: "15.5\n"),
            .init(executable: "uname", arguments: ["-m"], stdout: machine + "\n"),
        ]
    }

    /// `ditto SRC DST` copies the bundle (here: FileManager, as the fake).
    static func ditto(from source: URL) -> ScriptedRunner.Step {
        .init(
            executable: "ditto", arguments: [source.path, ScriptedRunner.any],
            effect: { command in
                try FileManager.default.copyItem(
                    at: URL(fileURLWithPath: command.arguments[0]),
                    to: URL(fileURLWithPath: command.arguments[1]))
            })
    }

    static func export(_ plist: String) -> ScriptedRunner.Step {
        .init(executable: "defaults", arguments: ["export", bundleID, "-"], stdout: plist)
    }

    /// `defaults import DOMAIN -`: the fake keeps what arrived on stdin.
    static func importing(into store: Store) -> ScriptedRunner.Step {
        .init(
            executable: "defaults", arguments: ["import", bundleID, "-"],
            effect: { command in
                #expect(!command.arguments.joined().contains(token))
                #expect(!command.description.contains(token))
                store.set(try #require(command.standardInput))
            })
    }

    static let quitScript =
        "if application id \"\(bundleID)\" is running then tell application id \"\(bundleID)\" to quit"

    static func quit() -> ScriptedRunner.Step {
        .init(executable: "osascript", arguments: ["-e", quitScript])
    }

    static func running(_ answer: Bool) -> ScriptedRunner.Step {
        .init(
            executable: "osascript", arguments: ["-e", "application id \"\(bundleID)\" is running"],
            stdout: answer ? "true\n" : "false\n")
    }

    static func open(_ app: URL, effect: (@Sendable (ProcessCommand) throws -> Void)? = nil)
        -> ScriptedRunner.Step
    {
        .init(executable: "open", arguments: [app.path], effect: effect)
    }

    final class Store: @unchecked Sendable {
        let lock = NSLock()
        var data: Data?
        func set(_ value: Data) { lock.withLock { data = value } }
        var plist: [String: Any] {
            lock.withLock {
                data.flatMap {
                    try? PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any]
                } ?? [:]
            }
        }
    }

    static func installed(_ home: URL) -> URL {
        home.appendingPathComponent("Library/Application Support/hadeploy/mac/\(bundleID)/HA Dashboard.app")
    }

    @Test func installSwapsInACopyKeepsThePreviousOneAndSkipsAnIdenticalBuild() async throws {
        let folder = try TemporaryFolder()
        let home = folder.path("home")
        let build = folder.path("build/Debug-maccatalyst/HA Dashboard.app")
        try Self.makeMacApp(at: build)
        let runner = ScriptedRunner(
            Self.connectSteps() + [Self.ditto(from: build), Self.ditto(from: build)])
        let mac = Self.driver(runner, home: home)
        let connected = try await mac.connect()
        #expect(connected.iosVersion == "15.5" && connected.arch == "arm64")

        let app = Self.artifact(build)
        #expect(try await mac.install(app, force: false) { _ in } == .installed)
        let installed = Self.installed(home)
        #expect(
            try String(
                contentsOf: installed.appendingPathComponent("Contents/MacOS/HA Dashboard"), encoding: .utf8)
                == "binary v1")
        // The same build again: nothing copied.
        #expect(try await mac.install(app, force: false) { _ in } == .unchanged)

        // A new build: the one it replaces is kept, whole, in previous/.
        try Self.makeMacApp(at: build, executable: "binary v2")
        #expect(try await mac.install(app, force: false) { _ in } == .installed)
        let previous = installed.deletingLastPathComponent().appendingPathComponent(
            "previous/HA Dashboard.app")
        #expect(
            try String(
                contentsOf: previous.appendingPathComponent("Contents/MacOS/HA Dashboard"), encoding: .utf8)
                == "binary v1")
        #expect(
            try String(
                contentsOf: installed.appendingPathComponent("Contents/MacOS/HA Dashboard"), encoding: .utf8)
                == "binary v2")
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: installed.deletingLastPathComponent().path)
        #expect(leftovers.sorted() == ["HA Dashboard.app", "previous"], "no staging folder left behind")
        #expect(runner.remaining == 0)
    }

    /// `hadeploy rollback mac`: the kept copy and the installed one change places, the app is quit
    /// and the restored copy opened; its new log session decides.
    @Test func rollbackReopensTheCopyTheLastInstallReplaced() async throws {
        let folder = try TemporaryFolder()
        let home = folder.path("home")
        let build = folder.path("build/Debug-maccatalyst/HA Dashboard.app")
        try Self.makeMacApp(at: build)
        // The reader wants a Mach-O executable: an arm64 header, then the build's own bytes.
        func machO(_ text: String) -> Data {
            var header = [UInt8](repeating: 0, count: 64)
            header.replaceSubrange(0..<4, with: [0xCF, 0xFA, 0xED, 0xFE])
            header.replaceSubrange(4..<8, with: [0x0C, 0x00, 0x00, 0x01])
            return Data(header) + Data(text.utf8)
        }
        let executable = build.appendingPathComponent("Contents/MacOS/HA Dashboard")
        try machO("v1").write(to: executable)
        let installed = Self.installed(home)
        let log = home.appendingPathComponent("Documents/ha-log.txt")
        let runner = ScriptedRunner([
            Self.ditto(from: build), Self.ditto(from: build), Self.quit(), Self.running(false),
            Self.open(installed) { _ in
                try FileManager.default.createDirectory(
                    at: log.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(
                    (LoadEvidenceVerifierTests.session([
                        "WebSocket authenticated",
                        "Lovelace config received: 2 views, 5 cards, strategy=none",
                    ])).utf8
                ).write(to: log)
            },
        ])
        let mac = Self.driver(runner, home: home)
        let rollback = MacRollback(
            driver: mac, bundleID: Self.bundleID, verificationTimeout: 5, clock: TestHost.clock)
        #expect(try await rollback.previous() == nil)
        _ = try await mac.install(Self.artifact(build), force: false) { _ in }
        try machO("v2").write(to: executable)
        _ = try await mac.install(Self.artifact(build), force: false) { _ in }
        #expect(try await rollback.previous()?.path.hasSuffix("previous/HA Dashboard.app") == true)

        let outcome = try await rollback.run()
        #expect(outcome.loaded)
        #expect(outcome.restored.path == installed.path)
        let running = try Data(contentsOf: installed.appendingPathComponent("Contents/MacOS/HA Dashboard"))
        #expect(running == machO("v1"), "the earlier build is the installed one again")
        let kept = try Data(
            contentsOf: installed.deletingLastPathComponent()
                .appendingPathComponent("previous/HA Dashboard.app/Contents/MacOS/HA Dashboard"))
        #expect(kept == machO("v2"), "and the one it replaced is kept, so a second rollback undoes it")
        #expect(runner.remaining == 0)
    }

    @Test func anIOSAppOrAnotherArchitectureIsRefusedBeforeAnythingIsCopied() async throws {
        let folder = try TemporaryFolder()
        let build = folder.path("HA Dashboard.app")
        try Self.makeMacApp(at: build)
        let runner = ScriptedRunner(Self.connectSteps(machine: "x86_64"))
        let mac = Self.driver(runner, home: folder.path("home"))
        _ = try await mac.connect()
        await #expect {
            try await mac.install(Self.artifact(build, platform: .iOS), force: false) { _ in }
        } throws: { error in
            "\(error)".contains("is an iOS app") && "\(error)".contains("sdk: maccatalyst")
        }
        await #expect {
            try await mac.install(Self.artifact(build), force: false) { _ in }
        } throws: { error in
            "\(error)".contains("this Mac is x86_64 but the build has only arm64")
        }
        #expect(!FileManager.default.fileExists(atPath: Self.installed(folder.path("home")).path))
        #expect(runner.remaining == 0)
    }

    /// The old script's `defaults write` put the token on a command line; here it reaches the
    /// domain on `defaults import`'s stdin, merged with the app's own keys, and the launch keys
    /// of an earlier deploy (`--reset`'s HAClearCredentials) are gone.
    @Test func launchMergesTheSettingsThroughStdinQuitsAndOpensTheInstalledCopy() async throws {
        let folder = try TemporaryFolder()
        let home = folder.path("home")
        let store = Store()
        let existing = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>HAClearCredentials</key><true/>
            <key>HAThemeMode</key><integer>2</integer>
            <key>ha_selected_dashboard</key><string>office</string>
            </dict></plist>
            """
        let runner = ScriptedRunner([
            Self.quit(), Self.running(false), Self.export(existing), Self.importing(into: store),
            Self.open(Self.installed(home)),
        ])
        let mac = Self.driver(runner, home: home)
        try await mac.launch(
            Self.artifact(folder.path("HA Dashboard.app")),
            settings: try TestApp.launch(token: Self.token, dashboard: .named("living-room")))
        let plist = store.plist
        #expect(plist["HAAccessToken"] as? String == Self.token)
        #expect(plist["HAServerURL"] as? String == "http://ha.local:8123")
        #expect(plist["HADashboard"] as? String == "living-room")
        #expect(plist["HAKioskMode"] as? Bool == true, "YES is a boolean, as `defaults write -bool` made it")
        #expect(plist["HAThemeMode"] as? Int == 2, "the app's own settings are kept")
        #expect(plist["ha_selected_dashboard"] as? String == "office")
        #expect(plist["HAClearCredentials"] == nil, "a past --reset does not wipe the login at every start")
        for command in runner.received {
            #expect(!command.arguments.joined(separator: " ").contains(Self.token), "\(command)")
            #expect(command.environment.values.allSatisfy { !$0.contains(Self.token) })
        }
        #expect(runner.remaining == 0)
    }

    @Test func anAppThatDoesNotQuitInTimeIsKilledAndOneThatSurvivesFailsTheLaunch() async throws {
        let folder = try TemporaryFolder()
        let home = folder.path("home")
        let store = Store()
        let empty = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict/></plist>\n"
        // Polling is time-bound, so a script cannot count the polls: the fake answers `true` until
        // killall has run, as for an app whose quit is held up by a dialog.
        let tool = QuitLoop(
            before: [Self.quit()], settings: [Self.export(empty), Self.importing(into: store)],
            killallStops: true, open: Self.open(Self.installed(home)))
        let mac = MacDriver(
            configuration: .init(
                label: "Mac", host: .macOS, home: home, quitGrace: .milliseconds(200),
                pollInterval: .milliseconds(20)),
            runner: tool, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
        try await mac.launch(
            Self.artifact(folder.path("HA Dashboard.app")),
            settings: try TestApp.launch(credentials: .demo, dashboard: .unchanged, kiosk: nil))
        #expect(tool.killed)
        #expect(tool.opened)
        #expect(store.plist["HADemoMode"] as? Bool == true)

        let survivor = QuitLoop(before: [Self.quit()], settings: [], killallStops: false, open: nil)
        let stuck = MacDriver(
            configuration: .init(
                label: "Mac", host: .macOS, home: home, quitGrace: .milliseconds(100),
                killGrace: .milliseconds(100), pollInterval: .milliseconds(20)),
            runner: survivor, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
        await #expect {
            try await stuck.launch(
                Self.artifact(folder.path("HA Dashboard.app")),
                settings: try TestApp.launch(credentials: .keep, dashboard: .unchanged, kiosk: nil))
        } throws: { error in
            "\(error)".contains("still running after a quit request and killall")
                && "\(error)".contains("quit it by hand")
        }
        #expect(!survivor.opened, "the old instance is never left running beside a new one")
        #expect(survivor.settingsLeft == 0, "nor are its settings changed under it")
    }

    /// The first deploy: LaunchServices has never seen the bundle id (the copy was never opened),
    /// and `osascript -e 'application id "…" is running'` fails with AppleScript's -1728 instead of
    /// printing false. Before, that counted as "still running": 10 s of polling, killall, and a
    /// failed deploy. Now it is "not running".
    @Test func anAppLaunchServicesDoesNotKnowIsNotRunning() async throws {
        let folder = try TemporaryFolder()
        let unknown = ScriptedRunner.Step(
            executable: "osascript", arguments: ["-e", "application id \"\(Self.bundleID)\" is running"],
            status: 1,
            stderr: "0:40: execution error: Can’t get application id \"\(Self.bundleID)\". (-1728)\n")
        let mac = Self.driver(ScriptedRunner([unknown]), home: folder.path("home"))
        let stopped = try await mac.waitUntilStopped(
            Self.artifact(folder.path("HA Dashboard.app")), within: .milliseconds(100))
        #expect(stopped)
        #expect(!MacDriver.isUnknownApplication("0:35: execution error: An error of type -600 has occurred."))
    }

    /// A FAKE of osascript/killall for the quit loop: `is running` answers `true` until `killall`
    /// ran (when `killallStops`), then `false` — what the real tools print for a running app;
    /// `defaults` replays `settings`.
    final class QuitLoop: ProcessRunner, @unchecked Sendable {
        let lock = NSLock()
        var before: [ScriptedRunner.Step]
        var settings: [ScriptedRunner.Step]
        let killallStops: Bool
        let openStep: ScriptedRunner.Step?
        var killed = false
        var opened = false

        init(
            before: [ScriptedRunner.Step], settings: [ScriptedRunner.Step], killallStops: Bool,
            open: ScriptedRunner.Step?
        ) {
            self.before = before
            self.settings = settings
            self.killallStops = killallStops
            self.openStep = open
        }

        var settingsLeft: Int { lock.withLock { settings.count } }

        func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
            let next: ScriptedRunner.Step? = lock.withLock {
                if !before.isEmpty { return before.removeFirst() }
                if command.executable == "defaults", !settings.isEmpty { return settings.removeFirst() }
                return nil
            }
            if let next {
                #expect(command.executable == next.executable)
                #expect(ScriptedRunner.matches(command.arguments, next.arguments), "\(command.arguments)")
                try next.effect?(command)
                return ProcessOutput(
                    status: next.status, standardOutput: Data(next.stdout.utf8), standardError: Data())
            }
            switch (command.executable, command.arguments.last ?? "") {
            case ("osascript", let script) where script.hasSuffix("is running"):
                let running = lock.withLock { !(killed && killallStops) }
                return ProcessOutput(
                    status: 0, standardOutput: Data((running ? "true\n" : "false\n").utf8),
                    standardError: Data())
            case ("killall", "HA Dashboard"):
                lock.withLock { killed = true }
                return ProcessOutput(status: 0, standardOutput: Data(), standardError: Data())
            case ("open", _):
                guard let openStep, command.arguments == openStep.arguments else {
                    Issue.record("unexpected open: \(command)")
                    throw ProcessError.launchFailed(command: command, reason: "not expected")
                }
                lock.withLock { opened = true }
                return ProcessOutput(status: 0, standardOutput: Data(), standardError: Data())
            default:
                Issue.record("unexpected command: \(command)")
                throw ProcessError.launchFailed(command: command, reason: "not in the script")
            }
        }
    }

    @Test func theAppsLogIsReadFromTheHomeFolderOrItsContainerWhenSandboxed() async throws {
        let folder = try TemporaryFolder()
        let home = folder.path("home")
        let mac = Self.driver(ScriptedRunner([]), home: home)
        let app = Self.artifact(folder.path("HA Dashboard.app"))
        #expect(try await mac.appDataFile(app, relativePath: "Documents/ha-log.txt") == nil)
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        try Data("home log".utf8).write(to: home.appendingPathComponent("Documents/ha-log.txt"))
        #expect(try await mac.appDataFile(app, relativePath: "Documents/ha-log.txt") == Data("home log".utf8))
        #expect(try await mac.appDataFile(app, relativePath: "../home/Documents/ha-log.txt") == nil)

        let container = home.appendingPathComponent("Library/Containers/\(Self.bundleID)/Data/Documents")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        try Data("container log".utf8).write(to: container.appendingPathComponent("ha-log.txt"))
        #expect(
            try await mac.appDataFile(app, relativePath: "Documents/ha-log.txt") == Data("container log".utf8)
        )
        let places = MacAppLocations(home: home, bundleID: Self.bundleID, appName: "HA Dashboard.app")
        #expect(
            places.defaultsDomain(in: TestHost.fileSystem).hasSuffix(
                "Containers/\(Self.bundleID)/Data/Library/Preferences/\(Self.bundleID).plist"))
    }

    @Test func onLinuxNothingRunsAndTheErrorSaysWhy() async throws {
        let folder = try TemporaryFolder()
        let mac = Self.driver(ScriptedRunner([]), home: folder.path("home"), host: .linux)
        await #expect {
            try await mac.connect()
        } throws: { error in
            "\(error)".contains("this host is Linux")
                && "\(error)".contains("deploy this device from the Mac")
        }
    }

    @Test func makeReadsHomeAndTheDevicesTimeouts() throws {
        let (plan, _, _) = try DriverTestPlans.plan("mac", variables: ["HOME": "/Users/dev"])
        let driver = try #require(
            try DriverRegistry(
                host: .macOS, environment: [:], runner: FailingRunner(), fileSystem: FakeFileSystem(),
                clock: FakeClock()
            ).driver(for: plan)
                as? MacDriver)
        #expect(driver.configuration.home.path == "/Users/dev")
        #expect(driver.configuration.diagnosticReports.path == "/Users/dev/Library/Logs/DiagnosticReports")
    }
}
