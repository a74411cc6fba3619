import Foundation
import HADeployDrivers
import SSHTestPeers
import SSHTransport
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A jailbroken install sends the new app into a staging copy next to `/Applications/<Name>.app`
/// (the size of the app: 194–328 MB for the real one). However an install ends — the upload cut, a
/// later step failing, hadeploy interrupted or killed — no staging copy stays on the device: the failed
/// install removes it (after putting back an app a cut swap parked there), and whatever a killed run
/// could not remove goes at the start of the next deploy.
@Suite("no staging copy left on the jailbroken twin, however an install ends")
struct StagingCleanupTests {
    /// What the install directory holds besides the installed apps' own folders and hash files.
    static func stagingLeft(_ twin: JailbreakTwin, _ directory: String = "/Applications") -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: twin.url(directory).path)) ?? []
        return names.filter { $0.hasPrefix(".hadeploy-staging") }.sorted()
    }

    /// Starts the twin with build 1 installed; returns it, a deployer and build 2 (with a big file).
    static func installedTwin(bigFileBytes: Int = 24 << 20) async throws -> (
        JailbreakTwin, JailbreakDeployConfig, TestApp, TestApp
    ) {
        let twin = try await JailbreakTwin.start()
        let v1 = try TestApp(version: "1")
        let v2 = try TestApp(version: "2", bigFileBytes: bigFileBytes)
        let config = try await twin.deployConfig()
        _ = try await JailbreakDeployer(live: config).install(app: v1.url)
        return (twin, config, v1, v2)
    }

    @Test("an upload cut off mid-way: the staging copy is removed at once, and the next deploy leaves none")
    func aCutUploadLeavesNoStaging() async throws {
        let (twin, config, v1, v2) = try await Self.installedTwin()
        defer {
            twin.stopAndClean()
            v1.remove()
            v2.remove()
        }
        let deployer = JailbreakDeployer(live: config)
        let cut = Flag()
        let error = await #expect(throws: SSHError.self) {
            try await deployer.install(app: v2.url) { progress in
                if progress.bytesSent > 2 << 20, cut.setOnce() { twin.dropSessions() }
            }
        }
        guard case .transferInterrupted(_, _, _, _, let removed, _) = error else {
            Issue.record("expected transferInterrupted, got \(String(describing: error))")
            return
        }
        #expect(removed, "\(String(describing: error))")
        #expect(Self.stagingLeft(twin) == [], "right after the cut")
        #expect(try await deployer.install(app: v2.url).changed)
        #expect(Self.stagingLeft(twin) == [], "after the next deploy")
    }

    /// Ctrl-C of hadeploy cancels the install's task: the cleanup must still reach the device.
    @Test("an install cancelled mid-upload (Ctrl-C) removes its staging copy before it returns")
    func aCancelledInstallLeavesNoStaging() async throws {
        let (twin, config, v1, v2) = try await Self.installedTwin()
        defer {
            twin.stopAndClean()
            v1.remove()
            v2.remove()
        }
        let deployer = JailbreakDeployer(live: config)
        let installed = twin.url("/Applications/HADash.app")
        let before = TestApp.snapshot(installed)
        let holder = TaskHolder()
        let cut = Flag()
        let task = Task {
            try await deployer.install(app: v2.url) { progress in
                if progress.bytesSent > 2 << 20, cut.setOnce() { holder.cancel() }
            }
        }
        holder.set(task)
        let started = Date()
        let result = await task.result
        #expect(throws: (any Error).self) { try result.get() }
        #expect(cut.isSet, "the upload never reached 2 MB")
        #expect(Date().timeIntervalSince(started) < 30, "a cancelled install ends promptly")
        #expect(Self.stagingLeft(twin) == [], "right after the cancelled install")
        #expect(TestApp.snapshot(installed) == before, "the installed app is untouched")
    }

    @Test("a step failing after the upload (ownership and modes) removes the staging copy")
    func aFailedStepLeavesNoStaging() async throws {
        let (twin, config, v1, v2) = try await Self.installedTwin(bigFileBytes: 4 << 20)
        defer {
            twin.stopAndClean()
            v1.remove()
            v2.remove()
        }
        var failing = config
        failing.commands.permissions = "echo 'chown: invalid group' >&2; exit 1"
        let installed = twin.url("/Applications/HADash.app")
        let before = TestApp.snapshot(installed)
        let error = await #expect(throws: SSHError.self) {
            try await JailbreakDeployer(live: failing).install(app: v2.url)
        }
        guard case .remoteCommandFailed(_, let step, _, _, let stderr) = error else {
            Issue.record("expected remoteCommandFailed, got \(String(describing: error))")
            return
        }
        #expect(step == "setting ownership and modes" && stderr.contains("invalid group"))
        #expect(Self.stagingLeft(twin) == [], "right after the failed step")
        #expect(TestApp.snapshot(installed) == before)
    }

    @Test("a rollback whose backup archive is broken removes what it unpacked, and keeps the app")
    func aFailedRollbackLeavesNoStaging() async throws {
        let twin = try await JailbreakTwin.start()
        defer { twin.stopAndClean() }
        let v1 = try TestApp(version: "1", bigFileBytes: 4 << 20)
        let v2 = try TestApp(version: "2")
        defer {
            v1.remove()
            v2.remove()
        }
        let deployer = JailbreakDeployer(live: try await twin.deployConfig())
        _ = try await deployer.install(app: v1.url)
        let backup = try #require(try await deployer.install(app: v2.url).backup)
        let installed = twin.url("/Applications/HADash.app")
        let before = TestApp.snapshot(installed)
        // The backup taken before build 2 holds build 1: cut its archive in half.
        let archive = twin.url(backup + "/HADash.app-before.tar.gz")
        let bytes = try Data(contentsOf: archive)
        try bytes.prefix(bytes.count / 2).write(to: archive)

        await #expect(throws: SSHError.self) { try await deployer.rollback(bundleID: "io.hadeploy.test") }
        #expect(Self.stagingLeft(twin) == [], "right after the failed rollback")
        #expect(TestApp.snapshot(installed) == before, "the installed app is untouched")
    }

    /// A run killed outright (SIGKILL, power cut) cleans nothing itself: the next deploy into the same
    /// install directory removes what earlier runs left there — of this app and of any other (a renamed
    /// app, another flavour) — and first puts back an app whose swap was cut between its two renames.
    @Test("the next deploy removes every staging copy earlier runs left, after repairing a cut swap")
    func theNextDeployRemovesStagingOfEarlierRuns() async throws {
        let (twin, config, v1, v2) = try await Self.installedTwin(bigFileBytes: 0)
        defer {
            twin.stopAndClean()
            v1.remove()
            v2.remove()
        }
        let manager = FileManager.default
        let applications = twin.url("/Applications")
        // This app's upload, killed mid-way.
        let own = applications.appendingPathComponent(".hadeploy-staging-HADash.app/delta")
        try manager.createDirectory(at: own, withIntermediateDirectories: true)
        try Data(count: 1 << 20).write(to: own.appendingPathComponent("big.bin"))
        // Another app's (an earlier name): its upload killed, and a third app's swap cut between renames.
        let renamed = applications.appendingPathComponent(".hadeploy-staging-Old Name.app/Old Name.app")
        try manager.createDirectory(at: renamed, withIntermediateDirectories: true)
        try Data(count: 1 << 20).write(to: renamed.appendingPathComponent("payload.bin"))
        let parked = applications.appendingPathComponent(".hadeploy-staging-Other.app/.previous")
        try manager.createDirectory(at: parked, withIntermediateDirectories: true)
        try Data("other app".utf8).write(to: parked.appendingPathComponent("Other"))
        // A link named like a staging copy is removed, never followed.
        let kept = twin.url("/var/mobile/kept")
        try manager.createDirectory(at: kept, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: kept.appendingPathComponent("keep.txt"))
        try manager.createSymbolicLink(
            atPath: applications.appendingPathComponent(".hadeploy-staging-Link.app").path,
            withDestinationPath: "/var/mobile/kept")

        #expect(try await JailbreakDeployer(live: config).install(app: v2.url).changed)
        #expect(Self.stagingLeft(twin) == [])
        #expect(twin.text("/Applications/Other.app/Other") == "other app", "the parked app is put back")
        #expect(twin.text("/var/mobile/kept/keep.txt") == "keep", "a link is not followed")
        #expect(
            twin.data("/Applications/HADash.app/Info.plist")
                == (try Data(contentsOf: v2.url.appendingPathComponent("Info.plist"))), "build 2 installed")
    }

    /// The user's view: hadeploy interrupted (SIGINT) mid-upload over a 1 MB/s link ends without a
    /// staging copy on the iPad, and the next deploy installs the new build and leaves none either.
    @Test("Ctrl-C of hadeploy mid-upload leaves no staging copy on the iPad; the next deploy neither")
    func interruptingHadeployLeavesNoStaging() async throws {
        let project = try await JailbreakCLITests.Project(bytesPerSecond: 1_000_000)
        defer { project.stop() }
        let v1 = try project.app(build: 1)
        let first = try await HADeployBinary.run(
            project.deployArguments(v1), in: project.root,
            environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts], timeout: .seconds(180))
        #expect(first.status == 0, "\(first.stderr)")
        let installed = project.twin.url("/Applications/HADashboard.app")
        let v1Snapshot = JailbreakTwinTests.snapshot(installed)

        // 8 MB over 1 MB/s: interrupted once more than 1 MB of it is on the device.
        let v2 = try project.app(build: 2, extraBytes: 8 << 20)
        var arguments =
            ["-i"] + project.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // In the project's checkout (devices.yaml, .env): `sh` changes there and execs hadeploy.
        arguments += ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", project.root.path]
        arguments += [try await HADeployBinary.path] + project.deployArguments(v2)
        let output = project.root.appendingPathComponent("interrupted.log").path
        let pid = try TestEnvironment.spawn("/usr/bin/env", arguments, outputPath: output)
        let sent = project.twin.url("/Applications/.hadeploy-staging-HADashboard.app/delta/payload.bin")
        // `env` exec'd `sh`, which exec'd hadeploy: same pid.
        let reached = await TestEnvironment.sendSignal(
            SIGINT, to: pid,
            when: {
                let size = (try? FileManager.default.attributesOfItem(atPath: sent.path))?[.size] as? NSNumber
                return (size?.intValue ?? 0) > 1 << 20
            }, timeout: 90)
        if !reached { kill(pid, SIGINT) }
        #expect(
            reached,
            "the upload never got going: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        let status = await TestEnvironment.waitAsync(pid, timeout: 60)
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(status != nil && status != 0, "\(log)")
        #expect(
            StagingCleanupTests.stagingLeft(project.twin) == [], "right after the interrupted run: \(log)")
        #expect(JailbreakTwinTests.snapshot(installed) == v1Snapshot, "the old app stays")

        let second = try await HADeployBinary.run(
            project.deployArguments(v2), in: project.root,
            environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts], timeout: .seconds(180))
        #expect(second.status == 0, "\(second.stderr)")
        #expect(StagingCleanupTests.stagingLeft(project.twin) == [], "after the next deploy")
        #expect(
            JailbreakTwinTests.snapshot(installed)["payload.bin"]
                == (try Data(contentsOf: v2.appendingPathComponent("payload.bin"))))
    }
}

/// Lets a progress callback cancel the task it runs in.
final class TaskHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<InstallReport, any Error>?
    private var cancelled = false

    func set(_ task: Task<InstallReport, any Error>) {
        let cancelNow = lock.withLock {
            self.task = task
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
