import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import SSHTestPeers
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import SSHTransport

/// Thread-safe flag for callbacks.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// Sets the flag; returns true only for the first caller.
    func setOnce() -> Bool {
        lock.withLock {
            defer { value = true }
            return !value
        }
    }
    var isSet: Bool { lock.withLock { value } }
}

@Suite("Jailbreak deploy over real SSH servers")
struct DeployTests {
    static let token = "tok-\(UUID().uuidString)"

    /// A launch as the plan gives it, the token read from the environment as the run does.
    static func launch(
        server: String, token: String, dashboard: DashboardTarget, kiosk: Bool?, deployID: String? = nil,
        deviceID: String? = nil, appSettings: AppSettings = [:]
    ) throws -> ResolvedLaunch {
        try ResolvedLaunch(
            LaunchSettings(
                credentials: .homeAssistant(
                    server: .value(server), token: SecretReference(environment: "HA_TOKEN")),
                dashboard: dashboard, kiosk: kiosk, autoRegister: false, appSettings: appSettings,
                deployID: deployID, deviceID: deviceID),
            environment: ["HA_TOKEN": token])
    }

    static func launchParameters() throws -> ResolvedLaunch {
        try launch(
            server: "http://ha.local:8123", token: token, dashboard: .named("lovelace-kiosk"), kiosk: true,
            deployID: "deploy-42", deviceID: "ipad2")
    }

    @Test(
        "deploy uploads, installs, refreshes icons and launches; an unchanged app is skipped",
        arguments: [SSHPeer.Kind.modern, .legacy, .noSFTP, .dropbear])
    func deployToEachServer(kind: SSHPeer.Kind) async throws {
        let peer = try await SSHPeer.start(kind)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        let deployer = JailbreakDeployer(live: device.deployConfig(try await peer.config(name: "ipad2")))

        let report = try await deployer.deploy(app: app.url, launch: try Self.launchParameters())
        #expect(report.changed)
        #expect(report.method == (kind == .noSFTP ? .scp : .sftp))
        let installed = URL(fileURLWithPath: device.applications).appendingPathComponent("HADash.app")
        #expect(report.installedPath == installed.path)
        #expect(TestApp.snapshot(installed) == TestApp.snapshot(app.url))
        #expect(TestApp.snapshot(installed)["HADash"]?.hasSuffix(":x") == true)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: device.applications)
        #expect(leftovers.sorted() == [".HADash.app.hadeploy-hash", "HADash.app"])

        let calls = device.read("calls.log")
        #expect(calls.contains("uicache"))
        #expect(calls.contains("kill HADash"))
        #expect(calls.contains("launch io.hadeploy.test"))
        #expect(!calls.contains(Self.token))
        #expect(
            device.read("launch.stdin")
                == "-HAServerURL\nhttp://ha.local:8123\n-HAAccessToken\n\(Self.token)\n-HADashboard\nlovelace-kiosk\n"
                + "-HAKioskMode\nYES\n-HADeployID\ndeploy-42\n-HADeviceID\nipad2\n")
        // What `ps` on the device showed while the launcher ran: the token is not in any command line.
        let processList = device.read("launch.ps")
        #expect(processList.contains("launch io.hadeploy.test"))
        #expect(!processList.contains(Self.token))

        let again = try await deployer.deploy(app: app.url, launch: try Self.launchParameters())
        #expect(!again.changed && again.method == nil)
        #expect(device.read("calls.log").components(separatedBy: "uicache").count - 1 == 1)
        let forced = try await deployer.install(app: app.url, force: true)
        #expect(forced.changed)
    }

    @Test("SCP can be chosen explicitly, and an SFTP-only choice fails clearly without SFTP")
    func transferChoice() async throws {
        let peer = try await SSHPeer.start(.noSFTP)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        let sftpOnly = JailbreakDeployer(
            live: device.deployConfig(try await peer.config(), transfer: .sftp))
        await #expect(throws: SSHError.self) { try await sftpOnly.install(app: app.url) }
        #expect(!FileManager.default.fileExists(atPath: device.applications + "/HADash.app"))
        let scp = JailbreakDeployer(live: device.deployConfig(try await peer.config(), transfer: .scp))
        let report = try await scp.install(app: app.url)
        #expect(report.method == .scp)
    }

    @Test("an SFTP subsystem that never answers is cut off at its deadline and SCP takes over")
    func hangingSFTPFallsBackToSCP() async throws {
        let peer = try await SSHPeer.start(.hangingSFTP)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        var connection = try await peer.config()
        connection.timeouts.sftpInit = 2
        let started = Date()
        let report = try await JailbreakDeployer(live: device.deployConfig(connection)).install(
            app: app.url)
        #expect(report.method == .scp)
        // A hang would last forever; the install's dozen remote steps take seconds, more under the load
        // of the parallel suites on 2 cores.
        #expect(Date().timeIntervalSince(started) < 40)
        let installed = URL(fileURLWithPath: device.applications).appendingPathComponent("HADash.app")
        #expect(TestApp.snapshot(installed) == TestApp.snapshot(app.url))
    }

    @Test("devices.yaml command overrides map onto the config; typos and {token} are refused")
    func commandOverrides() throws {
        var config = JailbreakDeployConfig(
            connection: SSHConnectionConfig(
                host: "10.0.0.5", authentication: .agent(socketPath: nil), knownHostsPath: "/dev/null",
                fileSystem: TestHost.fileSystem))
        try config.apply(commandOverrides: [
            "install_dir": "/var/stash/Applications", "refresh": "uicache -p {app}",
            "launch": "open {bundle_id}", "kill": "killall -9 {executable}",
            "screenshot": "screendump {output}",
        ])
        #expect(config.installDirectory == "/var/stash/Applications")
        #expect(config.commands.refreshIcons == "uicache -p {app}")
        #expect(config.commands.kill == "killall -9 {executable}")
        #expect(throws: SSHError.self) { try config.apply(commandOverrides: ["relaunch": "x"]) }
        #expect(throws: SSHError.self) { try config.apply(commandOverrides: ["launch": "open {token}"]) }
        #expect(throws: SSHError.self) {
            try config.apply(commandOverrides: ["kill": "killall {exectuable}"])
        }

        let parsed = try SSHConnectionConfig.parse(
            url: "ssh://pi@nas.local:2222", authentication: .agent(socketPath: nil),
            knownHostsPath: "/dev/null", fileSystem: TestHost.fileSystem,
            name: "mini4")
        #expect(
            parsed.host == "nas.local" && parsed.port == 2222 && parsed.user == "pi" && parsed.name == "mini4"
        )
        #expect(throws: SSHError.self) {
            try SSHConnectionConfig.parse(
                url: "http://nas", authentication: .agent(socketPath: nil), knownHostsPath: "/dev/null",
                fileSystem: TestHost.fileSystem)
        }
        // The app's default dashboard is `-HADashboard ""` (the app reads no -HADefaultDashboard).
        let secret = try Self.launch(
            server: "http://ha", token: "s3cr3t", dashboard: .appDefault, kiosk: false, deployID: "d")
        #expect(!"\(secret)".contains("s3cr3t") && "\(secret)".contains("-HADashboard ''"))
        #expect(!secret.arguments.contains("-HADefaultDashboard"))
    }

    @Test("an upload cut off half way leaves the installed app as it was and says so")
    func interruptedUpload() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let v1 = try TestApp(version: "1")
        defer { v1.remove() }
        let v2 = try TestApp(version: "2", bigFileBytes: 24 << 20)
        defer { v2.remove() }
        let deployer = JailbreakDeployer(live: device.deployConfig(try await peer.config()))
        let installed = URL(fileURLWithPath: device.applications).appendingPathComponent("HADash.app")
        let staging = device.applications + "/.hadeploy-staging-HADash.app"
        _ = try await deployer.install(app: v1.url)
        let v1Snapshot = TestApp.snapshot(installed)
        let v1Hash = device.read("Applications/.HADash.app.hadeploy-hash")

        // 1. The connection dies (its server processes are killed) but the server still runs:
        //    the staging copy is removed over a new connection.
        let cut = Flag()
        let sessionsKilled = await #expect(throws: SSHError.self) {
            try await deployer.install(app: v2.url) { progress in
                if progress.bytesSent > 2 << 20, cut.setOnce() {
                    guard let pid = peer.serverPID else { return }
                    for child in TestEnvironment.descendants(of: pid) { kill(child, SIGKILL) }
                }
            }
        }
        guard case .transferInterrupted(_, _, _, _, let removed, _) = sessionsKilled else {
            Issue.record("expected transferInterrupted, got \(String(describing: sessionsKilled))")
            return
        }
        #expect(removed)
        #expect(sessionsKilled?.description.contains("was left as it was") == true)
        #expect(TestApp.snapshot(installed) == v1Snapshot)
        #expect(!FileManager.default.fileExists(atPath: staging))

        // 2. The whole server dies mid-upload: nothing can be cleaned now, and the message says so.
        let dead = Flag()
        let serverKilled = await #expect(throws: SSHError.self) {
            try await deployer.install(app: v2.url) { progress in
                if progress.bytesSent > 2 << 20, dead.setOnce() { peer.kill() }
            }
        }
        guard case .transferInterrupted(_, _, _, _, let removedAfterKill, _) = serverKilled else {
            Issue.record("expected transferInterrupted, got \(String(describing: serverKilled))")
            return
        }
        #expect(!removedAfterKill)
        #expect(serverKilled?.description.contains("will be removed by the next deploy") == true)
        #expect(TestApp.snapshot(installed) == v1Snapshot)
        #expect(device.read("Applications/.HADash.app.hadeploy-hash") == v1Hash)

        // 3. Back online: the next deploy cleans up and installs v2.
        try await peer.restart()
        let report = try await deployer.install(app: v2.url)
        #expect(report.changed)
        #expect(TestApp.snapshot(installed) == TestApp.snapshot(v2.url))
        #expect(!FileManager.default.fileExists(atPath: staging))
    }

    @Test("a failing remote command reports its stderr")
    func failingCommand() async throws {
        let peer = try await SSHPeer.start(.dropbear)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        var config = device.deployConfig(try await peer.config(name: "ipad2"))
        config.commands.refreshIcons = "echo 'uicache: SpringBoard is not running' >&2; exit 3"
        let error = await #expect(throws: SSHError.self) {
            try await JailbreakDeployer(live: config).install(app: app.url)
        }
        guard case .remoteCommandFailed(_, _, _, let status, let stderr) = error else {
            Issue.record("expected remoteCommandFailed, got \(String(describing: error))")
            return
        }
        #expect(status == 3)
        #expect(stderr == "uicache: SpringBoard is not running")
        #expect(error?.description.contains("ipad2") == true)

        // A missing install directory is a remote failure with a readable reason, too.
        config.installDirectory = device.url.path + "/NoSuchDir"
        let missing = await #expect(throws: SSHError.self) {
            try await JailbreakDeployer(live: config).install(app: app.url)
        }
        #expect(missing?.description.contains("does not exist") == true)
    }

    @Test("screenshot returns the image bytes; stop reports whether the app ran; args file is private")
    func screenshotStopAndArgsFile() async throws {
        let peer = try await SSHPeer.start(.legacy)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        var config = device.deployConfig(try await peer.config())
        let deployer = JailbreakDeployer(live: config)
        #expect(try await deployer.screenshot() == device.screen)
        config.commands.screenshot = "cat \(device.url.path)/screen.png"
        #expect(try await JailbreakDeployer(live: config).screenshot() == device.screen)

        config.commands.launch = "\(device.url.path)/bin/launch {bundle_id} {args_file}"
        _ = try await JailbreakDeployer(live: config).deploy(
            app: app.url, launch: try Self.launchParameters())
        #expect(device.read("launch.argsfile").contains(Self.token))
        let mode = device.read("launch.argsfile.mode")
        #expect(mode.hasPrefix("-rw-------"))
        let argsPath = mode.split(separator: " ").last.map {
            String($0).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(
            argsPath.map { !FileManager.default.fileExists(atPath: $0) } == true, "args file must be removed")
        #expect(!device.read("launch.ps").contains(Self.token))

        #expect(try await deployer.stop(app: app.url) == true)
        #expect(try await deployer.stop(app: app.url) == false)
    }

    @Test("templates refuse unknown placeholders, and there is no way to put the token in a command line")
    func templates() throws {
        let values = ["app": "/Applications/My App.app", "name": "x"]
        #expect(
            try JailbreakCommands.expand("ls {app}", values, field: "t") == "ls '/Applications/My App.app'")
        #expect(throws: SSHError.self) {
            try JailbreakCommands.expand("run {token}", values, field: "launch")
        }
        #expect(throws: SSHError.self) { try JailbreakCommands.expand("run {appp}", values, field: "launch") }
        #expect(ShellQuote.quote("it's") == "'it'\\''s'")
    }
}
