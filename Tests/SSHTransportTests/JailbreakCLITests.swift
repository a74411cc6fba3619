import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import SSHTestPeers
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real `hadeploy` binary against the jailbroken twin: a project checkout whose devices.yaml
/// reaches the iPad 2 over SSH, through a throttling proxy so a deploy can be killed mid-upload.
@Suite("hadeploy deploy and rollback against the jailbroken twin")
struct JailbreakCLITests {
    final class Project: @unchecked Sendable {
        let root: URL
        let twin: JailbreakTwin
        let proxyPort: Int
        let proxy: pid_t
        let ha: HomeAssistantServer
        let knownHosts: String

        init(bytesPerSecond: Int) async throws {
            ha = try await HomeAssistantServer.shared()
            twin = try await JailbreakTwin.start(.openssh, legacy: true)
            root = try TestEnvironment.makeDirectory("hadeploy-jb-project")
            proxyPort = try FreePort.pick()
            proxy = try TestEnvironment.spawn(
                "/usr/bin/python3",
                [
                    TestEnvironment.repoRoot.appendingPathComponent("scripts/jailbreak-twin/throttle.py")
                        .path,
                    String(proxyPort), String(twin.port), String(bytesPerSecond),
                ], outputPath: root.appendingPathComponent("proxy.log").path)
            knownHosts = root.appendingPathComponent("known_hosts").path
            let lines = try await twin.knownHostsLines().map {
                $0.replacingOccurrences(of: "]:\(twin.port) ", with: "]:\(proxyPort) ")
            }
            try (lines.joined(separator: "\n") + "\n").write(
                toFile: knownHosts, atomically: true, encoding: .utf8)
            let yaml = """
                version: 1
                flavours:
                  legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}
                devices:
                  ipad2:
                    name: iPad 2
                    product_type: iPad2,1
                    ios: "9.3.5"
                    arch: armv7
                    flavour: legacy
                    transport: ssh
                    host: 127.0.0.1
                    dashboard: ""
                    ssh:
                      user: root
                      port: \(proxyPort)
                      key: \(TestEnvironment.rsaKey)
                      legacy_algorithms: true
                    timeouts: {install: 120}

                """
            try yaml.write(to: root.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
            try "HA_SERVER=\(ha.url)\nHA_TOKEN=\(ha.token)\nBUNDLE_ID=io.hadeploy.demo\n".write(
                to: root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
            try ".env\nartifacts/\n.hadeploy/\nreport*/\nknown_hosts\nproxy.log\n".write(
                to: root.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
            try await GitRepository.commitAll(at: root, tag: "v1.0.0")
            for _ in 0..<100 where !TestEnvironment.isListening(port: proxyPort) {
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        /// A demo build (Mach-O with armv7 and arm64 slices) plus `extraBytes` of random payload.
        func app(build: Int, extraBytes: Int = 0) throws -> URL {
            let flavour = Flavour(
                name: "legacy", xcode: nil, archs: [.armv7, .arm64], deploymentTarget: "9.0", sdk: "iphoneos",
                configuration: "Release", scheme: nil, settings: [:],
                location: SourceLocation(file: "devices.yaml", line: 1))
            let directory = root.appendingPathComponent("artifacts/\(build)")
            let artifact = try DemoAppBuilder(bundleID: "io.hadeploy.demo").build(
                flavour: flavour, marketingVersion: "1.0.\(build)", buildNumber: build, into: directory,
                now: Date(), in: TestHost.fileSystem)
            let app = URL(fileURLWithPath: artifact.path)
            if extraBytes > 0 {
                var generator = SystemRandomNumberGenerator()
                let words = (0..<(extraBytes / 8)).map { _ in generator.next() as UInt64 }
                try words.withUnsafeBytes { Data($0) }.write(to: app.appendingPathComponent("payload.bin"))
            }
            return app
        }

        var environment: [String: String] {
            var variables = HADeployBinary.baseEnvironment(home: root)
            variables["HADEPLOY_KNOWN_HOSTS"] = knownHosts
            variables["XDG_CACHE_HOME"] = root.appendingPathComponent("cache").path
            return variables
        }

        func deployArguments(_ app: URL) -> [String] {
            ["deploy", "ipad2", "--no-build", "--artifact", app.path, "--no-verify"]
        }

        func stop() {
            kill(proxy, SIGKILL)
            _ = TestEnvironment.wait(proxy, timeout: 5)
            twin.stopAndClean()
            TestEnvironment.remove(root)
        }
    }

    @Test("a first deploy and an update to the jailbroken twin both end verified by the app's own log")
    func firstDeployAndUpdateEndVerified() async throws {
        let project = try await Project(bytesPerSecond: 50_000_000)
        defer { project.stop() }
        for build in [1, 2] {
            let app = try project.app(build: build)
            let result = try await HADeployBinary.run(
                ["deploy", "ipad2", "--no-build", "--artifact", app.path, "--report", "report-\(build)"],
                in: project.root, environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts],
                timeout: .seconds(180))
            #expect(result.status == 0, "build \(build): \(result.stderr)")
            let summary = try Data(
                contentsOf: project.root.appendingPathComponent("report-\(build)/summary.json"))
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let device = try #require(try decoder.decode(DeployReport.self, from: summary).results.first)
            #expect(device.outcome == .succeeded, "build \(build): \(device.reason ?? "")")
            guard case .loaded = device.verification else {
                Issue.record("build \(build) not verified: \(device.verification)")
                continue
            }
            #expect(device.evidence?.contains(.appLog) == true, "\(String(describing: device.evidence))")
        }
    }

    @Test("SIGKILL of hadeploy mid-upload leaves the old app complete; the next deploy installs the new one")
    func sigkillMidwayLeavesOldOrNew() async throws {
        let project = try await Project(bytesPerSecond: 1_000_000)
        defer { project.stop() }
        let sampler = ProcessListSampler(secrets: [project.ha.token])
        let v1 = try project.app(build: 1)
        let first = try await HADeployBinary.run(
            project.deployArguments(v1), in: project.root,
            environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts],
            timeout: .seconds(180))
        #expect(first.status == 0, "\(first.stderr)")
        let installed = project.twin.url("/Applications/HADashboard.app")
        let v1Snapshot = JailbreakTwinTests.snapshot(installed)
        #expect(!v1Snapshot.isEmpty)
        let prefs = try #require(project.twin.data("/var/mobile/Library/Preferences/io.hadeploy.demo.plist"))
        let values = try #require(
            try PropertyListSerialization.propertyList(from: prefs, format: nil) as? [String: Any])
        // As 1.3 does: the launch keys were used once; the login is in the app's keychain (ldid gave
        // it the build's entitlements), the dashboard it applied is its own setting.
        #expect(values["HAServerURL"] == nil && values["HAAccessToken"] == nil, "\(values.keys.sorted())")
        #expect(values["ha_dashboard"] as? String == "")
        #expect(
            project.twin.text("/var/mobile/Library/Caches/io.hadeploy.demo.twin-keychain.plist").contains(
                project.ha.url))

        // 6 MB over a 1 MB/s link: killed after 2 s, in the middle of the upload.
        let v2 = try project.app(build: 2, extraBytes: 6 << 20)
        var arguments =
            ["-i"] + project.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // In the project's checkout (its devices.yaml and .env): `sh` changes there and execs hadeploy.
        arguments += ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", project.root.path]
        arguments += [try await HADeployBinary.path] + project.deployArguments(v2)
        let output = project.root.appendingPathComponent("killed.log").path
        let pid = try TestEnvironment.spawn("/usr/bin/env", arguments, outputPath: output)
        let staging = project.twin.url("/Applications/.hadeploy-staging-HADashboard.app/delta/payload.bin")
        // `env` exec'd `sh`, which exec'd hadeploy: same pid.
        let midUpload = await TestEnvironment.sendSignal(
            SIGKILL, to: pid,
            when: {
                let sent = (try? FileManager.default.attributesOfItem(atPath: staging.path))?[.size]
                return ((sent as? NSNumber)?.intValue ?? 0) > 1 << 20
            }, timeout: 60)
        if !midUpload { kill(pid, SIGKILL) }
        #expect(
            midUpload, "never mid-upload: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        _ = await TestEnvironment.waitAsync(pid, timeout: 10)
        try await Task.sleep(for: .seconds(1))
        #expect(
            JailbreakTwinTests.snapshot(installed) == v1Snapshot, "killed mid-upload: the old app must stay")

        let second = try await HADeployBinary.run(
            project.deployArguments(v2), in: project.root,
            environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts], timeout: .seconds(180))
        #expect(second.status == 0, "\(second.stderr)")
        let v2Snapshot = JailbreakTwinTests.snapshot(installed)
        #expect(v2Snapshot["payload.bin"] == (try Data(contentsOf: v2.appendingPathComponent("payload.bin"))))
        #expect(v2Snapshot["Info.plist"] == (try Data(contentsOf: v2.appendingPathComponent("Info.plist"))))
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: project.twin.url("/Applications").path)
        #expect(!leftovers.contains { $0.hasPrefix(".hadeploy-staging") })

        // rollback puts build 1 back byte for byte and sees it load (its log through SSH).
        let rolled = try await HADeployBinary.run(
            ["rollback", "ipad2"], in: project.root,
            environment: ["HADEPLOY_KNOWN_HOSTS": project.knownHosts],
            timeout: .seconds(180))
        #expect(JailbreakTwinTests.snapshot(installed) == v1Snapshot)
        #expect(
            rolled.stdout.contains("restored /Applications/HADashboard.app"),
            "\(rolled.stdout)\(rolled.stderr)")
        #expect(rolled.status == 0, "\(rolled.stdout)\(rolled.stderr)")

        let (leaks, samples) = sampler.stop()
        #expect(samples > 10 && leaks.isEmpty, "\(leaks)")
        for text in [first.stdout, first.stderr, second.stdout, second.stderr, rolled.stdout, rolled.stderr] {
            #expect(!text.contains(project.ha.token))
        }
    }

    @Test("--virtual gives the iPad 2 a jailbroken twin reached over SSH, stopped after the run")
    func virtualRunUsesTheJailbreakTwin() async throws {
        let root = try TestEnvironment.makeDirectory("hadeploy-jb-virtual")
        defer { TestEnvironment.remove(root) }
        try await JailbreakProject.create(at: root)
        let run = try await HADeployBinary.run(
            ["ipad2", "--virtual", "--no-verify"], in: root, timeout: .seconds(180))
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let output = run.stdout + run.stderr
        let line = output.split(separator: "\n").first { $0.hasPrefix("ipad2 ") }.map(String.init) ?? ""
        #expect(line.contains(" ssh "), "\(output)")
        let twinRoot = root.appendingPathComponent(".hadeploy/virtual/jailbreak/ipad2/root")
        let executable = twinRoot.appendingPathComponent("Applications/HADashboard.app/HADashboard")
        #expect(FileManager.default.fileExists(atPath: executable.path), "\(run.stderr)")
        // Launched: the twin's `open` accepted the bundle id (known to uicache, signed by ldid) and
        // recorded the app's pid. With --no-verify the run ends there, as `open` returns on a real
        // device before the app has logged anything, so the app's own log is not waited for.
        let pid =
            (try? String(
                contentsOf: twinRoot.appendingPathComponent("var/run/twin/HADashboard.pid"),
                encoding: .utf8)) ?? ""
        #expect(Int(pid.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 > 0, "\(output)")
        // The namespace went with the run: nothing of the twin still runs.
        let ps = try await TestEnvironment.run("/bin/ps", ["-eo", "args"])
        #expect(!ps.output.contains(twinRoot.path), "\(ps.output)")
    }

    @Test("status over SSH: boot time from sysctl, free space from df, the installed build; no battery")
    func statusOfTheJailbreakTwin() async throws {
        let root = try TestEnvironment.makeDirectory("hadeploy-jb-status")
        try await JailbreakProject.create(at: root)
        defer { TestEnvironment.remove(root) }
        let run = try await HADeployBinary.run(
            ["status", "ipad2", "--virtual", "--json"], in: root, timeout: .seconds(120))
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let device = try #require(
            (object?["devices"] as? [[String: Any]])?.first, "\(run.stdout)\(run.stderr)")
        func value(_ key: String) -> Any? { (device[key] as? [String: Any])?["value"] }
        func unavailable(_ key: String) -> String? {
            (device[key] as? [String: Any])?["unavailable"] as? String
        }
        #expect(device["reachable"] as? Bool == true, "\(device)")
        #expect(device["backend"] as? String == "ssh", "\(device)")
        // The twin's boot is this host's (kern.boottime from sysctl, as iOS prints it).
        let boot = try #require(value("boot") as? [String: Any], "\(device)")
        #expect(boot["bootedAt"] is String)
        let storage = try #require(value("storage") as? [String: Any], "\(device)")
        #expect((storage["availableBytes"] as? Int ?? 0) > 0)
        #expect(unavailable("battery")?.contains("jailbroken") == true, "\(device)")
        // A twin starts empty for each run: nothing installed, nothing running, exit code 1.
        #expect(device["build"] as? String == "missing", "\(device)")
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
    }
}
