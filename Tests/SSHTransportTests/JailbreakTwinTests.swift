import Foundation
import HADeployCore
import HomeAssistant
import SSHTestPeers
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployDrivers
@testable import HADeployKit
@testable import SSHTransport

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Jailbroken iPad twin: backup, delta install, ldid, uicache, preferences, open, rollback")
struct JailbreakTwinTests {
    static let bundleID = "io.hadeploy.test"
    static let preferences = "/var/mobile/Library/Preferences/io.hadeploy.test.plist"
    static let keychain = "/var/mobile/Library/Caches/io.hadeploy.test.twin-keychain.plist"

    /// A storage dashboard with 2 views and 3 cards in the real Home Assistant.
    static func seedDashboard(_ ha: HomeAssistantServer) async throws -> String {
        let path = "twin-\(UUID().uuidString.prefix(6).lowercased())"
        let connection = HomeAssistantConnection(
            options: ClientOptions(
                server: try ServerAddress(ha.url + "/"), token: AccessToken(ha.token), clock: TestHost.clock))
        try await connection.connect()
        do {
            _ = try await connection.send(
                RawRequest("lovelace/dashboards/create", ["url_path": .string(path), "title": .string(path)]))
            let card: JSONValue = .object(["type": .string("entities"), "entities": .array([])])
            let config: JSONValue = .object([
                "views": .array([
                    .object(["title": .string("One"), "cards": .array([card, card])]),
                    .object(["title": .string("Two"), "cards": .array([card])]),
                ])
            ])
            _ = try await connection.send(
                RawRequest("lovelace/config/save", ["url_path": .string(path), "config": config]))
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        return path
    }

    static func launch(_ ha: HomeAssistantServer, dashboard: String) throws -> ResolvedLaunch {
        try DeployTests.launch(
            server: ha.url, token: ha.token, dashboard: .named(dashboard), kiosk: true,
            appSettings: ["HAViewIndex": .integer(1)])
    }

    /// Waits until the app's log has `sessions` sessions and the last one proves a loaded dashboard.
    static func waitForLoad(_ twin: JailbreakTwin, sessions: Int, timeout: Double = 40) async -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var log = ""
        while Date() < deadline {
            log = twin.text("/var/mobile/Documents/ha-log.txt")
            let parts = log.components(separatedBy: "=== HA Dashboard log session ===")
            if parts.count - 1 >= sessions, let last = parts.last,
                last.contains("Lovelace config received") || last.contains("failed")
            {
                return log
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return log
    }

    static func snapshot(_ url: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: url.path)) ?? [] {
            result[path] =
                FileManager.default.contents(atPath: url.appendingPathComponent(path).path)
                ?? Data("dir".utf8)
        }
        return result
    }

    static func fileStatus(_ url: URL) -> (mode: Int, uid: UInt32) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue,
            let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
        else { return (-1, 0) }
        return (mode, owner)
    }

    @Test(
        "first deploy and a one-file update end loaded; only the changed file is sent; the token is on no command line",
        arguments: [(JailbreakTwin.Server.openssh, true), (.dropbear, false)])
    func deployAndUpdate(server: JailbreakTwin.Server, legacy: Bool) async throws {
        let ha = try await HomeAssistantServer.shared()
        let dashboard = try await Self.seedDashboard(ha)
        let twin = try await JailbreakTwin.start(server, legacy: legacy)
        defer { twin.stopAndClean() }
        let app = try TestApp()
        defer { app.remove() }
        // Every command line on the host, the twin's included (its PID namespace is visible from here).
        let watch = ProcessListSampler(secrets: [ha.token])
        let deployer = JailbreakDeployer(live: try await twin.deployConfig())
        let launch = try Self.launch(ha, dashboard: dashboard)

        let first = try await deployer.deploy(app: app.url, launch: launch)
        #expect(first.changed && first.signed)
        #expect(first.backup?.hasPrefix("/var/mobile/Library/HADashboard-backups/io.hadeploy.test/") == true)
        let installed = twin.url("/Applications/HADash.app")
        let local = Self.snapshot(app.url)
        let onDevice = Self.snapshot(installed)
        #expect(Set(onDevice.keys) == Set(local.keys))
        for (path, data) in local where path != "HADash" { #expect(onDevice[path] == data, "\(path)") }
        // ldid -S rewrote the executable in place: the sent bytes plus the twin's pseudo-signature.
        let executable = try #require(onDevice["HADash"])
        #expect(executable.starts(with: try #require(local["HADash"])))
        #expect(executable.count > local["HADash"]!.count)

        let log = await Self.waitForLoad(twin, sessions: 1)
        #expect(log.contains("NSUserDefaults read END (url=YES, token=YES)"))
        // As 1.3 does: the bootstrap keys were applied once and removed; the login is in the keychain
        // (signed with the build's entitlements), the settings the app applied are its own keys.
        #expect(first.keychainEntitled, "\(first)")
        let prefsURL = twin.url(Self.preferences)
        let prefsData = try #require(twin.data(Self.preferences))
        #expect(prefsData.starts(with: Data("bplist00".utf8)))
        let prefs = try #require(
            try PropertyListSerialization.propertyList(from: prefsData, format: nil) as? [String: Any])
        for key in ["HAServerURL", "HAAccessToken", "HADashboard", "HAKioskMode"] {
            #expect(prefs[key] == nil, "\(key) is a bootstrap key, used once: \(prefs)")
        }
        #expect(prefs["ha_dashboard"] as? String == dashboard)
        #expect(prefs["HAViewIndex"] as? Int == 1)
        #expect(
            Self.fileStatus(prefsURL).mode == 0o600
                && Self.fileStatus(prefsURL).uid == twin.mobileHostID)
        #expect(twin.text(Self.keychain).contains(ha.token), "the login is in the app's keychain")
        #expect(log.contains("[conn] WebSocket authenticated"))
        #expect(log.contains("Lovelace config received: 2 views, 3 cards, strategy=none"))
        #expect(
            try await deployer.mobileFile("Documents/ha-log.txt").map { String(decoding: $0, as: UTF8.self) }
                == log)
        let png = try await deployer.screenshot()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(!FileManager.default.fileExists(atPath: twin.url("/tmp/screenshot.png").path))

        // One file changes: only it is sent; the app restarts and loads again.
        let changedFile = app.url.appendingPathComponent("odd name's.txt")
        try Data("a new text".utf8).write(to: changedFile)
        let update = try await deployer.deploy(app: app.url, launch: launch)
        #expect(update.changed)
        #expect(update.filesSent == ["odd name's.txt"])
        #expect(update.bytesSent == 10)
        #expect(twin.data("/Applications/HADash.app/odd name's.txt") == Data("a new text".utf8))
        #expect(twin.data("/Applications/HADash.app/HADash") == executable)
        let second = await Self.waitForLoad(twin, sessions: 2)
        #expect(second.components(separatedBy: "[conn] WebSocket authenticated").count - 1 == 2)
        // killall ended the old process: one app runs, the new one.
        #expect(twin.appProcesses.count == 1, "\(twin.appProcesses)")

        let again = try await deployer.deploy(app: app.url, launch: launch)
        #expect(!again.changed && again.bytesSent == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: twin.url("/Applications").path)
        #expect(leftovers.sorted() == [".HADash.app.hadeploy-hash", "HADash.app"])

        let (hits, samples) = watch.stop()
        #expect(samples > 10)
        #expect(hits.isEmpty, "token on a command line: \(hits)")
        #expect(!"\(first) \(update) \(launch)".contains(ha.token))
    }

    /// HA Dashboard 1.3 uses its launch keys once and keeps the login only in its keychain, which works
    /// only when ldid signed it with the build's entitlements. Signed so, a relaunch without hadeploy
    /// (a reboot, a crash, iOS ending it) finds the login and loads the dashboard; a build without
    /// them is said to be one that will forget, and the relaunch is logged out.
    @Test("as 1.3: signed with the build's entitlements, a relaunch without hadeploy stays logged in")
    func aRelaunchWithoutHadeployKeepsTheLogin() async throws {
        let ha = try await HomeAssistantServer.shared()
        let dashboard = try await Self.seedDashboard(ha)
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let deployer = JailbreakDeployer(live: try await twin.deployConfig())
        let launch = try Self.launch(ha, dashboard: dashboard)
        func relaunch() async throws {
            let connection = try await SSHConnection.connect(try await twin.connection())
            defer { Task { await connection.close() } }
            let stopped = try await connection.execute(
                "killall HADash >/dev/null 2>&1; open io.hadeploy.test", step: "relaunching")
            #expect(stopped.succeeded, "\(stopped.stderrText)")
        }

        let app = try TestApp()
        defer { app.remove() }
        let report = try await deployer.deploy(app: app.url, launch: launch)
        #expect(report.signed && report.keychainEntitled && report.entitlementsProblem == nil, "\(report)")
        _ = await Self.waitForLoad(twin, sessions: 1)
        try await relaunch()
        let log = await Self.waitForLoad(twin, sessions: 2)
        let second = log.components(separatedBy: "=== HA Dashboard log session ===").last ?? ""
        #expect(second.contains("NSUserDefaults read END (url=NO, token=NO)"), "\(second)")
        #expect(second.contains("isConfigured=YES"), "\(second)")
        #expect(second.contains("Lovelace config received: 2 views, 3 cards"), "\(second)")

        // A build signed without its entitlements: the deploy says what will happen, and it does.
        let unsigned = try TestApp(version: "2", entitlements: nil)
        defer { unsigned.remove() }
        let plain = try await deployer.deploy(app: unsigned.url, launch: launch)
        #expect(plain.signed && !plain.keychainEntitled)
        #expect(plain.entitlementsProblem?.contains("forgets its login") == true, "\(plain)")
        let loaded = await Self.waitForLoad(twin, sessions: 3)
        #expect(loaded.contains("errSecMissingEntitlement"), "\(loaded)")
        try await relaunch()
        // Logged out, the app loads nothing: its session ends at isConfigured.
        var fourth = ""
        let deadline = Date().addingTimeInterval(40)
        while Date() < deadline {
            let parts = twin.text("/var/mobile/Documents/ha-log.txt").components(
                separatedBy: "=== HA Dashboard log session ===")
            if parts.count - 1 >= 4, let last = parts.last, last.contains("isConfigured=") {
                fourth = last
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(fourth.contains("isConfigured=NO"), "\(fourth)")
    }

    @Test("a backup that cannot be written stops the device before any change")
    func backupFailureTouchesNothing() async throws {
        let ha = try await HomeAssistantServer.shared()
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let v1 = try TestApp(version: "1")
        defer { v1.remove() }
        let v2 = try TestApp(version: "2")
        defer { v2.remove() }
        let deployer = JailbreakDeployer(live: try await twin.deployConfig())
        _ = try await deployer.deploy(app: v1.url, launch: try Self.launch(ha, dashboard: "one"))
        let installed = twin.url("/Applications/HADash.app")
        let appBefore = Self.snapshot(installed)
        // Once the app has applied its launch keys (and removed them, as 1.3 does).
        _ = await Self.waitForLoad(twin, sessions: 1)
        let prefsBefore = try #require(twin.data(Self.preferences))

        // The backup directory of this app is a file now: mkdir fails on the device.
        let backups = twin.url("/var/mobile/Library/HADashboard-backups/io.hadeploy.test")
        try FileManager.default.removeItem(at: backups)
        try Data("in the way".utf8).write(to: backups)

        let error = await #expect(throws: SSHError.self) {
            try await deployer.deploy(app: v2.url, launch: try Self.launch(ha, dashboard: "two"))
        }
        guard case .backupFailed = error else {
            Issue.record("expected backupFailed, got \(String(describing: error))")
            return
        }
        #expect(error?.description.contains("nothing on the device was changed") == true)
        #expect(Self.snapshot(installed) == appBefore)
        #expect(twin.data(Self.preferences) == prefsBefore)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: twin.url("/Applications").path)
        #expect(leftovers.sorted() == [".HADash.app.hadeploy-hash", "HADash.app"])
    }

    @Test("a dropped connection mid-upload or a swap cut between its renames leaves the old or the new app")
    func interruptionsLeaveOldOrNew() async throws {
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let v1 = try TestApp(version: "1")
        defer { v1.remove() }
        let v2 = try TestApp(version: "2", bigFileBytes: 24 << 20)
        defer { v2.remove() }
        let deployer = JailbreakDeployer(live: try await twin.deployConfig())
        _ = try await deployer.install(app: v1.url)
        let installed = twin.url("/Applications/HADash.app")
        let v1Snapshot = Self.snapshot(installed)

        let cut = Flag()
        let error = await #expect(throws: SSHError.self) {
            try await deployer.install(app: v2.url) { progress in
                if progress.bytesSent > 2 << 20, cut.setOnce() { twin.dropSessions() }
            }
        }
        guard case .transferInterrupted = error else {
            Issue.record("expected transferInterrupted, got \(String(describing: error))")
            return
        }
        #expect(Self.snapshot(installed) == v1Snapshot)

        // What a kill between the two renames of the swap leaves: no app, the old one parked in staging.
        let staging = twin.url("/Applications/.hadeploy-staging-HADash.app")
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: installed, to: staging.appendingPathComponent(".previous"))
        let repaired = try await deployer.install(app: v1.url)
        #expect(!repaired.changed)
        #expect(Self.snapshot(installed) == v1Snapshot)
        #expect(!FileManager.default.fileExists(atPath: staging.path))

        let report = try await deployer.install(app: v2.url)
        #expect(report.changed)
        #expect(Self.snapshot(installed)["big.bin"] == Self.snapshot(v2.url)["big.bin"])
    }

    @Test("rollback restores the previous app and preferences byte for byte and relaunches; old backups go")
    func rollbackRestoresByteForByte() async throws {
        let ha = try await HomeAssistantServer.shared()
        let dashboard = try await Self.seedDashboard(ha)
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let v1 = try TestApp(version: "1")
        defer { v1.remove() }
        let v2 = try TestApp(version: "2")
        defer { v2.remove() }
        var config = try await twin.deployConfig()
        config.backupsKept = 2
        let deployer = JailbreakDeployer(live: config)
        _ = try await deployer.deploy(app: v1.url, launch: try Self.launch(ha, dashboard: dashboard))
        let installed = twin.url("/Applications/HADash.app")
        let v1Snapshot = Self.snapshot(installed)
        // What the app keeps once it has applied its launch keys (1.3 removes them then).
        _ = await Self.waitForLoad(twin, sessions: 1)
        let v1Prefs = try #require(twin.data(Self.preferences))

        let update = try await deployer.deploy(
            app: v2.url, launch: try Self.launch(ha, dashboard: "other-board"))
        #expect(update.changed)
        #expect(Self.snapshot(installed) != v1Snapshot)
        #expect(twin.data(Self.preferences) != v1Prefs)
        _ = await Self.waitForLoad(twin, sessions: 2)

        let rolled = try await deployer.rollback(bundleID: Self.bundleID)
        #expect(rolled.preferencesRestored)
        #expect(rolled.backup == update.backup)
        #expect(Self.snapshot(installed) == v1Snapshot)
        #expect(twin.data(Self.preferences) == v1Prefs)
        let prefs = Self.fileStatus(twin.url(Self.preferences))
        #expect(prefs.mode == 0o600 && prefs.uid == twin.mobileHostID)
        let log = await Self.waitForLoad(twin, sessions: 3)
        let last = log.components(separatedBy: "=== HA Dashboard log session ===").last ?? ""
        #expect(last.contains("Lovelace config received: 2 views, 3 cards"))

        // The first deploy's backup holds no app: it cannot be restored, and says why.
        let names = try await deployer.backups(bundleID: Self.bundleID)
        #expect(names.count == 2)
        let empty = await #expect(throws: SSHError.self) {
            try await deployer.rollback(bundleID: Self.bundleID, backup: names[0])
        }
        #expect(empty?.description.contains("holds no app") == true)
        await #expect(throws: SSHError.self) {
            try await deployer.rollback(bundleID: Self.bundleID, backup: "20200101-000000-none")
        }
        // Only the newest `backupsKept` stay.
        _ = try await deployer.install(app: v2.url, force: true)
        #expect(try await deployer.backups(bundleID: Self.bundleID).count == 2)
        #expect(try await deployer.backups(bundleID: Self.bundleID).first != names[0])
    }

    @Test(
        "the .env password under the old scripts' key logs in as root; refused connects are transient, a bad login is not"
    )
    func passwordAndTransientFaults() async throws {
        // A real iPad 2 takes `alpine`; the twin takes a password only when asked, one made for this test.
        let secret = "pw-" + UUID().uuidString
        let twin = try await JailbreakTwin.start(.dropbear, password: secret)
        defer { twin.stopAndClean() }
        // devices.yaml says password_env: IPAD2_SSH_PASSWORD; the user's .env has the old IPAD2_SSH_PASS.
        let variables = ["IPAD2_SSH_PASS": secret]
        let reference = try #require(
            SSHBackend.Configuration.passwordReference("IPAD2_SSH_PASSWORD", in: variables))
        #expect(reference.description == "env:IPAD2_SSH_PASS")
        let password = try #require(reference.resolve(variables)?.reveal())
        #expect(
            SSHBackend.Configuration.passwordReference(
                "IPAD2_SSH_PASSWORD", in: ["IPAD2_SSH_PASSWORD": "", "IPAD2_SSH_PASS": ""]) == nil)
        let config = try await twin.connection(authentication: .password(Secret(password)))
        let connection = try await SSHConnection.connect(config)
        let whoami = try await connection.run("id -u; echo $HOME")
        await connection.close()
        #expect(whoami.stdoutText == "\(twin.sessionRootID)\n/var/root\n")

        let wrong = try await twin.connection(authentication: .password(Secret("not-alpine")))
        let denied = await #expect(throws: SSHError.self) { try await SSHConnection.connect(wrong) }
        #expect(denied?.isTransientConnectFault == false)

        var closed = config
        closed.port = try FreePort.pick()
        let refused = await #expect(throws: SSHError.self) { try await SSHConnection.connect(closed) }
        #expect(refused?.isTransientConnectFault == true)
        #expect((refused as (any Error)?).flatMap { $0 as? any TransientClassifying }?.isTransient == true)

        // A server that closes the connection before its banner (an sshd over MaxStartups): worth a
        // retry too.
        let listener = try TestEnvironment.closingListener()
        defer { listener.stop() }
        var dropped = config
        dropped.port = listener.port
        let closedEarly = await #expect(throws: SSHError.self) { try await SSHConnection.connect(dropped) }
        #expect(closedEarly?.isTransientConnectFault == true, "\(String(describing: closedEarly))")

        // A server that takes the connection and never sends its banner (OpenSSH on an iPad 4 with
        // h3lix): the error says so, and what the iPad 4 needs.
        let (silent, silentPort) = try FreePort.loopbackSocket(listening: true)
        defer { close(silent) }
        var quiet = config
        quiet.port = silentPort
        quiet.timeouts.connect = 2
        let mute = await #expect(throws: SSHError.self) { try await SSHConnection.connect(quiet) }
        let said = mute.map { "\($0)" } ?? ""
        #expect(said.contains("never sent its banner") && said.contains("Dropbear"), "\(said)")
    }

    @Test("iOS 10: Apple's signature and provisioning profile are removed on the host, not sent")
    func iOS10StripsTheAppleSignature() async throws {
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let app = try TestApp()
        defer { app.remove() }
        let signature = app.url.appendingPathComponent("_CodeSignature")
        try FileManager.default.createDirectory(at: signature, withIntermediateDirectories: true)
        try Data("apple".utf8).write(to: signature.appendingPathComponent("CodeResources"))
        try Data("profile".utf8).write(to: app.url.appendingPathComponent("embedded.mobileprovision"))
        var config = try await twin.deployConfig(name: "ipad4")
        config.stripAppleSignature = true
        let report = try await JailbreakDeployer(live: config).install(app: app.url)
        #expect(report.signed)
        #expect(
            !report.filesSent.contains { $0.hasPrefix("_CodeSignature") || $0 == "embedded.mobileprovision" })
        let installed = Self.snapshot(twin.url("/Applications/HADash.app"))
        #expect(installed["Info.plist"] != nil)
        #expect(
            installed["_CodeSignature/CodeResources"] == nil && installed["embedded.mobileprovision"] == nil)
        // The local bundle is left as it was, and the unsigned copy (made beside it, not in the shared
        // temporary folder) is gone.
        #expect(
            FileManager.default.fileExists(atPath: signature.appendingPathComponent("CodeResources").path))
        let beside = try FileManager.default.contentsOfDirectory(
            atPath: app.url.deletingLastPathComponent().path)
        #expect(!beside.contains { $0.hasPrefix(".hadeploy-unsigned-") }, "\(beside)")
    }

    @Test("launch settings become typed preference values merged into what the device has")
    func preferencesMerge() throws {
        let existing = try PropertyListSerialization.data(
            fromPropertyList: ["HAThemeMode": 1, "UserSetting": "kept", "HAKioskMode": true], format: .binary,
            options: 0)
        let launch = try DeployTests.launch(
            server: "http://ha.local:8123", token: "123", dashboard: .named("2"), kiosk: false,
            appSettings: ["HAThemeMode": .integer(2), "HADevStreamMode": .string("2")])
        let merged = try LaunchPreferences.plist(launch.preferences, mergedInto: existing)
        #expect(merged.starts(with: Data("bplist00".utf8)))
        let values = try #require(
            try PropertyListSerialization.propertyList(from: merged, format: nil) as? [String: Any])
        #expect(values["HADashboard"] as? String == "2", "a dashboard named 2 is a name")
        #expect(values["HAThemeMode"] as? Int == 2)
        #expect(values["HADevStreamMode"] as? String == "2", "a key the app reads as text stays text")
        #expect(values["HAKioskMode"] as? Bool == false)
        #expect(values["HAAccessToken"] as? String == "123")
        #expect(values["UserSetting"] as? String == "kept")
        // An unreadable plist on the device starts afresh instead of failing the deploy.
        let fresh = try LaunchPreferences.plist([:], mergedInto: Data("garbage".utf8))
        #expect(
            (try PropertyListSerialization.propertyList(from: fresh, format: nil) as? [String: Any])?.isEmpty
                == true)
    }

    @Test("hash listings of sha256sum, OpenSSL 1.0 and OpenSSL 3 read alike; unreadable lines mean resend")
    func manifestFormats() {
        let hash = String(repeating: "ab", count: 32)
        let listing = """
            D .
            D ./Base.lproj
            \(hash)  ./Info.plist
            SHA256(./HA Dashboard)= \(hash)
            SHA2-256(./Base.lproj/a (1).strings)= \(hash)
            \\\(hash)  ./odd\\nname
            garbage line
            """
        let manifest = RemoteManifest(listing: listing)
        #expect(manifest.directories == ["Base.lproj"])
        #expect(Set(manifest.files.keys) == ["Info.plist", "HA Dashboard", "Base.lproj/a (1).strings"])
        #expect(manifest.files.values.allSatisfy { $0 == hash })
        #expect(RemoteManifest.singleHash("SHA2-256(/tmp/x)= \(hash)\n") == hash)
        #expect(RemoteManifest.singleHash("\(hash)  /tmp/x\n") == hash)
        #expect(RemoteManifest.singleHash("no tool\n") == nil)
    }
}
