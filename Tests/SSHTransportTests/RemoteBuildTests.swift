import Foundation
import HADeployCore
import SSHTestPeers
import TestSupport
import Testing

/// `build_host: ssh://…`: a Linux machine without Xcode builds on a remote "Mac" — here a real OpenSSH
/// sshd on loopback logging in as the test user, with the xcodebuild/XcodeGen STAND-INS from
/// Tests/HADeployKitTests/Fixtures installed as that machine's tools (Xcode cannot run on Linux).
/// The real `hadeploy` binary sends the source tree, builds there and brings the app back.
@Suite("remote builds on a build host over SSH", .serialized)
struct RemoteBuildTests {
    static let fixtures = TestEnvironment.repoRoot.appendingPathComponent("Tests/HADeployKitTests/Fixtures")
    static let keyMaterial = "-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49-test-only-ASC-key\n"

    struct World {
        let peer: SSHPeer
        let root: URL
        let home: URL
        let project: URL
        let address: String

        var environment: [String: String] { ["HOME": home.path] }

        func hadeploy(_ arguments: [String], timeout: Duration = .seconds(240)) async throws
            -> HADeployBinary.Result
        {
            try await HADeployBinary.run(arguments, in: project, environment: environment, timeout: timeout)
        }

        func git(_ arguments: [String]) async throws {
            _ = try await TestHost.runner.checked(
                ProcessCommand(
                    "git", ["-C", project.path] + arguments,
                    environment: [
                        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null",
                    ]),
                timeout: .seconds(30))
        }

        /// The files an .ipa's app carries under Sources/ (what the stand-in build was given).
        func sources(inIPA path: String) async throws -> [String: String] {
            let script = """
                import json, sys, zipfile
                z = zipfile.ZipFile(sys.argv[1])
                prefix = "Payload/HADashboard.app/Sources/"
                print(json.dumps({n[len(prefix):]: z.read(n).decode() for n in z.namelist()
                                  if n.startswith(prefix) and not n.endswith("/")}))
                """
            let output = try await TestHost.runner.checked(
                ProcessCommand("python3", ["-c", script, path]), timeout: .seconds(30))
            return try JSONDecoder().decode([String: String].self, from: output.standardOutput)
        }

        /// `hadeploy build mini4` running in the background, with a stand-in "xcodebuild" there that
        /// takes `seconds` (the control file travels with the uncommitted changes).
        func startSlowBuild(seconds: Int) async throws -> Process {
            try "\(seconds)".write(
                to: project.appendingPathComponent("STANDIN_SLEEP"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try await HADeployBinary.path)
            process.arguments = ["build", "mini4"]
            process.currentDirectoryURL = project
            process.environment = HADeployBinary.baseEnvironment(home: home)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        /// The pid of the stand-in build running on the build host, once it has started (≤ 60 s).
        func remoteBuildPID() async throws -> pid_t? {
            let builds = try userHome() + "/.hadeploy-builds"
            for _ in 0..<600 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: builds)) ?? []
                if let work = names.first(where: { $0.hasPrefix(project.lastPathComponent + "-") }),
                    let text = try? String(
                        contentsOfFile: "\(builds)/\(work)/src/standin.pid", encoding: .utf8),
                    let pid = pid_t(text)
                {
                    return pid
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }

        func userHome() throws -> String {
            guard let entry = getpwnam(TestEnvironment.user) else {
                throw TestEnvironment.SetupMissing(description: "no user \(TestEnvironment.user)")
            }
            return String(cString: entry.pointee.pw_dir)
        }

        func stop() {
            peer.stopAndClean()
            // The build host's work tree for this checkout lives in the test user's home.
            if let entry = getpwnam(TestEnvironment.user) {
                let builds = String(cString: entry.pointee.pw_dir) + "/.hadeploy-builds"
                for name in (try? FileManager.default.contentsOfDirectory(atPath: builds)) ?? []
                where name.hasPrefix(project.lastPathComponent + "-") {
                    TestEnvironment.remove(URL(fileURLWithPath: builds + "/" + name))
                }
            }
            TestEnvironment.remove(root)
        }
    }

    /// An app repository with two flavours, the stand-ins committed under tools/, a template, and
    /// uncommitted work on top: an edited file, an untracked file, a deleted file.
    static func makeWorld(trusted: Bool = true) async throws -> World {
        let peer = try await SSHPeer.start(.modern)
        let root = try TestEnvironment.makeDirectory("hd-remote-build")
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".config/hadeploy"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".ssh"), withIntermediateDirectories: true)
        let key = home.appendingPathComponent(".ssh/id_ed25519").path
        try FileManager.default.copyItem(atPath: TestEnvironment.ed25519Key, toPath: key)
        chmod(key, 0o600)
        if trusted {
            try await peer.writeKnownHosts(
                to: home.appendingPathComponent(".config/hadeploy/known_hosts").path)
        }
        let project = root.appendingPathComponent("app-\(UUID().uuidString.prefix(8).lowercased())")
        // The builder's own tools, installed there (outside the app repository), as on a real Mac.
        let tools = root.appendingPathComponent("tools")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: project.appendingPathComponent("Templates"), withIntermediateDirectories: true)
        for (fixture, name) in [("xcodebuild-standin.py", "xcodebuild"), ("xcodegen-standin.sh", "xcodegen")]
        {
            let target = tools.appendingPathComponent(name).path
            try FileManager.default.copyItem(
                atPath: fixtures.appendingPathComponent(fixture).path, toPath: target)
            chmod(target, 0o755)
        }
        let address = "ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)"
        let files: [String: String] = [
            "devices.yaml": """
            build_host: \(address)
            flavours:
              legacy: {xcode: /Applications/Xcode-13.2.1.app, archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos, configuration: Legacy}
              modern: {xcode: /Applications/Xcode-26.app, archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
            devices:
              ipad2: {name: iPad 2, product_type: "iPad2,1", ios: 9.3.5, arch: armv7, flavour: legacy, transport: usb}
              mini4: {name: iPad mini 4, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb}
            """,
            ".env": """
            APP_NAME=HADashboard
            APPLE_TEAM_ID=ABCDE12345
            ASC_KEY_ID=KEY123
            ASC_ISSUER_ID=issuer-1
            ASC_KEY_PATH=\(root.appendingPathComponent("AuthKey_KEY123.p8").path)
            HADEPLOY_REMOTE_XCODEBUILD=\(tools.path)/xcodebuild
            HADEPLOY_REMOTE_XCODEGEN=\(tools.path)/xcodegen
            """,
            ".gitignore": ".env\n.hadeploy/\nGenerated/\nHADashboard.xcodeproj/\nstandin.log\n",
            "Templates/project.yml.mustache": "name: {{APP_NAME}}\noptions: {bundleIdPrefix: io.example}\n",
            "App.swift": "let version = 1\n",
            "Old.swift": "let old = true\n",
            "STANDIN_REQUIRE_KEY": "",
        ]
        for (path, text) in files {
            try text.write(to: project.appendingPathComponent(path), atomically: true, encoding: .utf8)
        }
        try keyMaterial.write(
            to: root.appendingPathComponent("AuthKey_KEY123.p8"), atomically: true, encoding: .utf8)
        let world = World(peer: peer, root: root, home: home, project: project, address: address)
        try await world.git(["init", "-q"])
        try await world.git(["add", "-A"])
        try await world.git(["commit", "-qm", "app"])
        try await world.git(["tag", "v2.1.0"])
        try "let version = 2\n".write(
            to: project.appendingPathComponent("App.swift"), atomically: true, encoding: .utf8)
        try "let extra = true\n".write(
            to: project.appendingPathComponent("Extra.swift"), atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(at: project.appendingPathComponent("Old.swift"))
        return world
    }

    @Test(
        "builds both flavours there from HEAD plus uncommitted changes, brings the apps back, then reuses them"
    )
    func buildsRemotely() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }

        let plan = try await world.hadeploy(["plan", "all", "--json"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("\"location\" : \"\(world.address)\""), "\(plan.stdout)")

        let first = try await world.hadeploy(["build", "all"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("build legacy: built on \(world.address)"), "\(first.stderr)")
        #expect(first.stderr.contains("build modern: built on \(world.address)"), "\(first.stderr)")
        let legacyLine = try #require(first.stdout.split(separator: "\n").first { $0.hasPrefix("legacy: ") })
        #expect(legacyLine.contains("(2.1.0 (1), armv7+arm64)"), "\(legacyLine)")
        #expect(first.stdout.contains("(2.1.0 (1), arm64)"), "\(first.stdout)")
        let ipa = world.project.appendingPathComponent(".hadeploy/build/legacy/HADashboard-2.1.0-1.ipa").path
        #expect(FileManager.default.fileExists(atPath: ipa))

        // The app was built from the working tree, not just HEAD, with the rendered spec of this .env.
        let sources = try await world.sources(inIPA: ipa)
        #expect(sources["App.swift"] == "let version = 2\n")
        #expect(sources["Extra.swift"] == "let extra = true\n")
        #expect(sources["Old.swift"] == nil)
        #expect(sources["project.yml"]?.contains("name: HADashboard") == true)

        // The App Store Connect key reached the build (the stand-in fails without it) and was removed after.
        let all = first.stdout + first.stderr
        #expect(!all.contains("MIGTAgEAMBMGByqGSM49"))
        let userHome = String(cString: try #require(getpwnam(TestEnvironment.user)).pointee.pw_dir)
        let builds = try FileManager.default.contentsOfDirectory(atPath: userHome + "/.hadeploy-builds")
        let work = try #require(builds.first { $0.hasPrefix(world.project.lastPathComponent + "-") })
        #expect(!FileManager.default.fileExists(atPath: "\(userHome)/.hadeploy-builds/\(work)/secrets"))
        #expect(FileManager.default.fileExists(atPath: "\(userHome)/.hadeploy-builds/\(work)/src/App.swift"))

        // Nothing changed: both flavours come from the cache, and the tree there is not sent again.
        let marker = "\(userHome)/.hadeploy-builds/\(work)/src/still-here"
        try "".write(toFile: marker, atomically: true, encoding: .utf8)
        let second = try await world.hadeploy(["build", "all"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("build legacy: up to date, reusing"), "\(second.stderr)")
        #expect(second.stderr.contains("build modern: up to date, reusing"), "\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: marker))

        // An edit is a new build there; XcodeGen does not run again for the unchanged spec.
        try "let version = 3\n".write(
            to: world.project.appendingPathComponent("App.swift"), atomically: true, encoding: .utf8)
        let third = try await world.hadeploy(["build", "ipad2"])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(third.stderr.contains("build legacy: built on"), "\(third.stderr)")
        #expect(try await world.sources(inIPA: ipa)["App.swift"] == "let version = 3\n")
        let log = try String(
            contentsOfFile: "\(userHome)/.hadeploy-builds/\(work)/src/standin.log", encoding: .utf8)
        // The tree there is fresh (this run's stand-in log only), yet the generated project was kept.
        #expect(log.contains("ARCHS=armv7 arm64"), "\(log)")
        #expect(!log.contains("xcodegen generate"), "\(log)")
    }

    @Test("a compile error there ends with its first errors, the local log's path and exit status 2")
    func remoteCompileErrors() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        // An untracked control file: it only reaches the build host as part of the uncommitted changes.
        try "".write(
            to: world.project.appendingPathComponent("STANDIN_FAIL"), atomically: true, encoding: .utf8)
        let result = try await HADeployBinary.run(
            ["build", "ipad2"], in: world.project,
            environment: world.environment.merging(["GITHUB_ACTIONS": "true"]) { _, new in new },
            timeout: .seconds(240))
        #expect(result.status == 2, "\(result.stderr)")
        // In CI each compiler error is annotated on its line, the build host's path made relative.
        #expect(
            result.stderr.contains(
                "::error file=App/DashboardView.swift,line=12,col=5,title=hadeploy::cannot find 'kioskMode' in scope"
            ),
            "\(result.stderr)")
        #expect(result.stderr.contains("DashboardView.swift:12:5: error: cannot find 'kioskMode' in scope"))
        #expect(result.stderr.contains("full log: \(world.project.path)/.hadeploy/build/legacy/build.log"))
        #expect(!result.stderr.contains("File1999.swift"), "only the first errors, not the whole log")
        let log = try String(
            contentsOfFile: world.project.appendingPathComponent(".hadeploy/build/legacy/build.log").path,
            encoding: .utf8)
        #expect(log.contains("File1999.swift"))
    }

    @Test("an untrusted build host stops before sending anything and says how to trust it")
    func untrustedBuildHost() async throws {
        let world = try await Self.makeWorld(trusted: false)
        defer { world.stop() }
        let result = try await world.hadeploy(["build", "mini4"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("hadeploy trust-host \(world.address)"), "\(result.stderr)")
        let userHome = String(cString: try #require(getpwnam(TestEnvironment.user)).pointee.pw_dir)
        let builds =
            (try? FileManager.default.contentsOfDirectory(atPath: userHome + "/.hadeploy-builds")) ?? []
        #expect(!builds.contains { $0.hasPrefix(world.project.lastPathComponent + "-") })

        // `trust-host build-host` shows the key; given the checked fingerprint, it trusts it.
        let shown = try await world.hadeploy(["trust-host", "build-host"])
        #expect(shown.status != 0, "no terminal and no --fingerprint: nothing is trusted")
        let fingerprints = try await world.peer.fingerprints()
        let offered = try #require(fingerprints.first { shown.stderr.contains($0) }, "\(shown.stderr)")
        let trusted = try await world.hadeploy(["trust-host", "build-host", "--fingerprint", offered])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let again = try await world.hadeploy(["build", "--flavour", "modern"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("build modern: built on \(world.address)"), "\(again.stderr)")
        #expect(!again.stderr.contains("build legacy"), "only the flavour asked for: \(again.stderr)")
        let misspelt = try await world.hadeploy(["build", "--flavour", "legacyy"])
        #expect(misspelt.status == 64, "\(misspelt.stderr)")
        #expect(misspelt.stderr.contains("unknown flavour legacyy (devices.yaml has legacy, modern)"))
    }

    @Test("a hadeploy killed during a remote build stops the build there too")
    func killedRunStopsTheRemoteBuild() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        let process = try await world.startSlowBuild(seconds: 120)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let remote = try #require(try await world.remoteBuildPID(), "the remote build never started")
        #expect(kill(remote, 0) == 0, "the remote build is running")

        // Pulled plug: no goodbye, no cleanup code of hadeploy's runs.
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        var gone = false
        for _ in 0..<200 where !gone {
            gone = kill(remote, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(gone, "the build on the build host outlived the hadeploy that started it")
    }

    @Test("a second build in the same checkout stops at once; the build in progress finishes undisturbed")
    func oneBuildPerCheckout() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        let process = try await world.startSlowBuild(seconds: 3)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(try await world.remoteBuildPID() != nil, "the first build never started")

        let second = try await world.hadeploy(["build", "all"])
        #expect(second.status == 2, "\(second.stderr)")
        #expect(
            second.stderr.contains("another hadeploy (pid \(process.processIdentifier)) is building in"),
            "\(second.stderr)")
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.terminationStatus == 0, "the first build was disturbed")
        // The lock went with the first run: the next build proceeds.
        try FileManager.default.removeItem(at: world.project.appendingPathComponent("STANDIN_SLEEP"))
        let third = try await world.hadeploy(["build", "mini4"])
        #expect(third.status == 0, "\(third.stderr)")
    }

    @Test("`hadeploy devices` says whether the build host answers and which Xcode each flavour finds")
    func devicesListsTheBuildHost() async throws {
        let world = try await Self.makeWorld(trusted: false)
        defer { world.stop() }
        let untrusted = try await world.hadeploy(["devices"])
        #expect(
            untrusted.stdout.contains("build host \(world.address): The SSH host key"), "\(untrusted.stdout)")
        #expect(untrusted.stdout.contains("hadeploy trust-host \(world.address)"))

        try await world.peer.writeKnownHosts(
            to: world.home.appendingPathComponent(".config/hadeploy/known_hosts").path)
        let listed = try await world.hadeploy(["devices", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let inventory = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
        let buildHost = try #require(inventory["buildHost"] as? [String: Any], "\(listed.stdout)")
        #expect(buildHost["address"] as? String == world.address)
        #expect(buildHost["problem"] == nil)
        let flavours = try #require(buildHost["flavours"] as? [String: String])
        #expect(flavours == ["legacy": "Xcode 26.0 (stand-in)", "modern": "Xcode 26.0 (stand-in)"])
        // A question, not a build: nothing was sent.
        let userHome = String(cString: try #require(getpwnam(TestEnvironment.user)).pointee.pw_dir)
        let builds =
            (try? FileManager.default.contentsOfDirectory(atPath: userHome + "/.hadeploy-builds")) ?? []
        #expect(!builds.contains { $0.hasPrefix(world.project.lastPathComponent + "-") })
    }

    @Test(
        "a deploy that would stop anyway stops before the build: missing settings, an unreachable Home Assistant"
    )
    func deployChecksBeforeBuilding() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        // A verifying deploy needs HA_SERVER and HA_TOKEN: the device fails, nothing is built. (With
        // --no-verify they are simply not sent: the app keeps the server and token it has.)
        let unset = try await world.hadeploy(["mini4"])
        #expect(unset.status == 1, "\(unset.stderr)")
        #expect(unset.stderr.contains("needs HA_SERVER, HA_TOKEN"), "\(unset.stderr)")
        #expect(!unset.stderr.contains("build modern: building"), "\(unset.stderr)")

        // Home Assistant does not answer: the preflight fails before a build of minutes starts.
        let port = try FreePort.pick()
        let unreachable = try await HADeployBinary.run(
            ["mini4", "--virtual"], in: world.project,
            environment: world.environment.merging([
                "HA_SERVER": "http://127.0.0.1:\(port)", "HA_TOKEN": "test-token-not-used",
            ]) { _, new in new }, timeout: .seconds(240))
        #expect(unreachable.status != 0, "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("before building"), "\(unreachable.stderr)")
        #expect(!unreachable.stderr.contains("build modern: building"), "\(unreachable.stderr)")
        #expect(!unreachable.stderr.contains("test-token-not-used"))
    }

    @Test("a deploy on Linux builds on the build host, then installs that app on the (virtual) devices")
    func deployUsesTheBuildHost() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        let result = try await world.hadeploy(
            ["mini4", "--virtual", "--no-verify", "--report", "out"], timeout: .seconds(300))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("build modern: built on \(world.address)"), "\(result.stderr)")
        #expect(!result.stderr.contains("demo app bundles"))
        let summary = try String(
            contentsOf: world.project.appendingPathComponent("out/summary.json"), encoding: .utf8)
        #expect(summary.contains("2.1.0"), "\(summary)")
    }

    /// `hadeploy plan … --json > plan.json`, then `hadeploy deploy --plan plan.json`: a plan that builds
    /// runs from its file in the checkout it was planned from (the build on the build host, then the
    /// install), and is refused anywhere else. Before, any plan that built was refused from a file.
    @Test("a plan that builds runs from its file in the checkout it was planned from, and nowhere else")
    func aPlanThatBuildsRunsFromItsFile() async throws {
        let world = try await Self.makeWorld()
        defer { world.stop() }
        // The device: one twin in a process of its own (`hadeploy virtual`), at a fixed UDID, with a
        // Developer Disk Image where the plan will look for it.
        let udid = "00008020-00115C2A0E38002E"
        try DeveloperDiskImageFixture.write(in: world.root.appendingPathComponent("DeviceSupport/15.8"))
        let devicesYAML = world.project.appendingPathComponent("devices.yaml")
        let yaml = try String(contentsOf: devicesYAML, encoding: .utf8)
            .replacingOccurrences(
                of: "flavour: modern, transport: usb}",
                with: "flavour: modern, transport: usb, udid: \"\(udid)\"}"
            )
            .replacingOccurrences(
                of: "flavours:\n",
                with:
                    "defaults: {ddi_dir: \(world.root.appendingPathComponent("DeviceSupport").path)}\nflavours:\n"
            )
        try yaml.write(to: devicesYAML, atomically: true, encoding: .utf8)
        let twins = try await VirtualTwinsProcess(
            project: world.project, only: ["mini4"],
            socket: world.root.appendingPathComponent("usbmuxd.sock"),
            state: world.root.appendingPathComponent("twins"), home: world.home)
        defer { twins.stop() }
        let environment = world.environment.merging(["USBMUXD_SOCKET_ADDRESS": twins.address]) { $1 }

        let planned = try await HADeployBinary.run(
            ["plan", "mini4", "--no-verify", "--json"], in: world.project, environment: environment,
            timeout: .seconds(120))
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stdout.contains("\"commands\""), "the plan names the build's commands")
        let planFile = world.root.appendingPathComponent("plan.json")
        try Data(planned.stdout.utf8).write(to: planFile)

        let run = try await HADeployBinary.run(
            ["deploy", "--plan", planFile.path, "--unsigned", "--report", "out", "--json"], in: world.project,
            environment: environment,
            timeout: .seconds(300))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            (run.stdout + run.stderr).contains("build modern: built on \(world.address)"), "\(run.stderr)")
        // The plan is the program, builds included: the run starts exactly the planned steps.
        let plan = try #require(
            try JSONSerialization.jsonObject(with: Data(planned.stdout.utf8)) as? [String: Any])
        let device = try #require(
            (plan["devices"] as? [[String: Any]])?.first { $0["id"] as? String == "mini4" })
        let plannedSteps = (device["steps"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        var executed: [String] = []
        for line in run.stdout.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["event"] as? String == "step_started", event["device"] as? String == "mini4",
                let step = event["step"] as? String, executed.last != step
            else { continue }
            executed.append(step)
        }
        #expect(!plannedSteps.isEmpty && executed == plannedSteps, "planned \(plannedSteps), ran \(executed)")
        let summary = try String(
            contentsOf: world.project.appendingPathComponent("out/summary.json"), encoding: .utf8)
        #expect(summary.contains("2.1.0"), "\(summary)")
        #expect(summary.contains("\"installed\""), "\(summary)")

        // Anywhere else (no checkout): refused before anything runs, saying where it runs.
        let elsewhere = world.root.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let refused = try await HADeployBinary.run(
            ["deploy", "--plan", planFile.path, "--unsigned"], in: elsewhere, environment: environment,
            timeout: .seconds(60))
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("only in the checkout it was planned from"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("building"), "\(refused.stderr)")
    }
}
