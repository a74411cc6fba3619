import Foundation
import HADeployBuild
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

/// The mac driver running real processes while a sampler watches every command line on this
/// machine. `defaults`, `osascript`, `killall`, `open`, `ditto`, `sw_vers` and `uname -m` of macOS
/// cannot run on Linux: each is a STAND-IN (a small Python script) that behaves as the real tool is
/// documented to — `defaults import DOMAIN -` reads a plist from stdin into the domain, `defaults
/// export DOMAIN -` prints it (a DOMAIN starting with `/` is that plist file), `osascript` answers
/// `is running` with true/false and quits the app with a signal as the quit Apple event would,
/// `killall` exits 1 when nothing runs, and `open [-n] APP [--args …]` starts the bundle's
/// `Contents/MacOS/<CFBundleExecutable>` with those arguments — a Mach-O cannot run on Linux, so for
/// one the stand-in app beside it (`<executable>.stand-in`) runs in its place, and when its
/// signature asks for the App Sandbox `open` makes the container first, as macOS does at a
/// sandboxed app's first launch. The executable is a stand-in app: it reads its settings from the
/// domain — the container's plist when sandboxed — and its `-Key value` arguments over them (as
/// NSUserDefaults would), and appends a session to `Documents/ha-log.txt` (in the container when
/// sandboxed) in HALog's format, then keeps running until it is quit.
@Suite(.serialized) struct MacStandInTests {
    let token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.mac-\(UUID().uuidString)"
    static let bundleID = "com.hadashboard.app"

    struct Mac {
        var tools: [String: String]
        var home: URL
        var state: URL
        var build: URL
    }

    func makeMac(in folder: TemporaryFolder, sandboxed: Bool = false) throws -> Mac {
        let python = try #require(TestHost.runner.locate("python3"), "python3 is needed for this test")
        let state = folder.path("mac-state")
        let home = folder.path("home")
        let bin = folder.path("bin")
        for directory in [state.appendingPathComponent("defaults"), home, bin] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let stateLiteral = String(reflecting: state.path)
        let header =
            "#!\(python)\nimport os, plistlib, signal, subprocess, sys, time\nSTATE = \(stateLiteral)\n"
            + "HOME = \(String(reflecting: home.path))\n"
            // launchd reaps a quit app at once; here an exited one may linger as a zombie.
            + TestPlatform.pythonIsRunning
            + "def pid():\n    try:\n        p = int(open(os.path.join(STATE, 'app.pid')).read())\n"
            + "        return p if alive(p) else None\n"
            + "    except (OSError, ValueError, IndexError):\n        return None\n"
        let scripts: [String: String] = [
            "sw_vers": "print('15.5')\n",
            "uname": "print('arm64')\n",
            "ditto": "import shutil\nshutil.copytree(sys.argv[1], sys.argv[2], symlinks=True)\n",
            "defaults": """
            verb, domain, dash = sys.argv[1:4]
            store = domain if domain.startswith('/') else os.path.join(STATE, 'defaults', domain + '.plist')
            if verb == 'export':
                data = open(store, 'rb').read() if os.path.exists(store) else plistlib.dumps({})
                sys.stdout.buffer.write(data)
            elif verb == 'import':
                values = plistlib.loads(sys.stdin.buffer.read())
                time.sleep(0.3)  # long enough for the sampler to see this process
                os.makedirs(os.path.dirname(store), exist_ok=True)
                open(store, 'wb').write(plistlib.dumps(values))
            else:
                sys.exit(1)

            """,
            "osascript": """
            script = sys.argv[2]
            if script.endswith('is running'):
                print('true' if pid() else 'false')
            elif script.endswith('to quit') and pid():
                os.kill(pid(), signal.SIGTERM)

            """,
            "killall": """
            open(os.path.join(STATE, 'killall.log'), 'a').write(' '.join(sys.argv[1:]) + '\\n')
            p = pid()
            if not p:
                sys.stderr.write('No matching processes belonging to you were found\\n')
                sys.exit(1)
            os.kill(p, signal.SIGKILL)

            """,
            "open": """
            open(os.path.join(STATE, 'open.log'), 'a').write(repr(sys.argv[1:]) + '\\n')
            args = sys.argv[1:]
            if args[0] == '-n':
                args = args[1:]
            app, extra = args[0], (args[2:] if args[1:2] == ['--args'] else [])
            info = plistlib.load(open(os.path.join(app, 'Contents', 'Info.plist'), 'rb'))
            exe = os.path.join(app, 'Contents', 'MacOS', info['CFBundleExecutable'])
            data = open(exe, 'rb').read()
            run, env = exe, dict(os.environ)
            if data[:4] in (b'\\xcf\\xfa\\xed\\xfe', b'\\xca\\xfe\\xba\\xbe'):
                run = exe + '.stand-in'
            if b'com.apple.security.app-sandbox' in data:
                container = os.path.join(HOME, 'Library', 'Containers', info['CFBundleIdentifier'], 'Data')
                for sub in ('Documents', 'Library/Preferences'):
                    os.makedirs(os.path.join(container, sub), exist_ok=True)
                env['STAND_IN_CONTAINER'] = container
            subprocess.Popen([run] + extra, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            """,
        ]
        var tools: [String: String] = [:]
        for (name, body) in scripts {
            let url = bin.appendingPathComponent(name)
            try Data((header + body).utf8).write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
            tools[name] = url.path
        }
        // The stand-in app, as the bundle's executable.
        let build = folder.path("build/Debug-maccatalyst/HA Dashboard.app")
        try MacDriverTests.makeMacApp(at: build)
        let app = """
            import datetime
            open(os.path.join(STATE, 'app.pid'), 'w').write(str(os.getpid()))
            container = os.environ.get('STAND_IN_CONTAINER')
            name = \(String(reflecting: Self.bundleID)) + '.plist'
            store = (os.path.join(container, 'Library', 'Preferences', name) if container
                     else os.path.join(STATE, 'defaults', name))
            settings = plistlib.load(open(store, 'rb')) if os.path.exists(store) else {}
            argv = sys.argv[1:]
            for key, value in zip(argv[0::2], argv[1::2]):
                if key.startswith('-'):
                    settings[key[1:]] = value
            docs = os.path.join(container or HOME, 'Documents')
            os.makedirs(docs, exist_ok=True)
            url, token = settings.get('HAServerURL', ''), settings.get('HAAccessToken', '')
            date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S +0000')
            with open(os.path.join(docs, 'ha-log.txt'), 'a') as log:
                log.write('\\n=== HA Dashboard log session ===\\nDevice: iPad / iOS 26.0\\nDate: %s\\n' % date)
                log.write('Min level: INFO\\n\\n')
                log.write('+    58.3ms  INFO [startup] NSUserDefaults read END (url=%s, token=%s)\\n'
                          % ('YES' if url else 'NO', 'YES' if token else 'NO'))
                log.write('+    60.0ms  INFO [startup] dashboard=%s\\n' % settings.get('HADashboard', ''))
            # launchd starts an app with no signal blocked; this one inherits the test runner's mask.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            while True:
                time.sleep(0.05)

            """
        var executable = build.appendingPathComponent("Contents/MacOS/HA Dashboard")
        if sandboxed {
            // The 1.3 build: a Mach-O signed with HADashboard-Catalyst.entitlements' sandbox.
            let entitlements = try PropertyListSerialization.data(
                fromPropertyList: [
                    "com.apple.security.app-sandbox": true, "com.apple.security.network.client": true,
                ], format: .xml, options: 0)
            try MachOWriter.executable(archs: [.arm64], entitlements: entitlements).write(to: executable)
            executable = build.appendingPathComponent("Contents/MacOS/HA Dashboard.stand-in")
        }
        try Data((header + app).utf8).write(to: executable)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable.path)
        return Mac(tools: tools, home: home, state: state, build: build)
    }

    /// The Mac driver on the stand-in tools, with short waits.
    static func driver(_ mac: Mac) -> MacDriver {
        MacDriver(
            configuration: .init(
                label: "Mac", host: .macOS, home: mac.home, commands: MacCommands(tools: mac.tools),
                quitGrace: .seconds(3), pollInterval: .milliseconds(50)),
            runner: TestHost.runner, fileSystem: TestHost.fileSystem, clock: TestHost.clock)
    }

    /// Stops the stand-in app this test started.
    func stopApp(_ mac: Mac) {
        guard
            let text = try? String(contentsOf: mac.state.appendingPathComponent("app.pid"), encoding: .utf8),
            let pid = Int32(text)
        else { return }
        kill(pid, SIGKILL)
    }

    /// Alive and not a zombie (nothing reaps the stand-in app here, as launchd would).
    func isRunning(_ pid: Int32) -> Bool {
        TestPlatform.isRunning(pid)
    }

    /// The running stand-in app's pid (other than `old`), once it has started.
    func appPID(_ mac: Mac, not old: Int32? = nil) async throws -> Int32 {
        for _ in 0..<200 {
            if let text = try? String(
                contentsOf: mac.state.appendingPathComponent("app.pid"), encoding: .utf8),
                let pid = Int32(text), pid != old
            {
                return pid
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw CancellationError()
    }

    @Test func theTokenReachesTheAppsDomainOnStdinAndNoCommandLineAndTheAppIsReplaced() async throws {
        let folder = try TemporaryFolder()
        let mac = try makeMac(in: folder)
        defer { stopApp(mac) }
        let driver = Self.driver(mac)
        let artifact = MacDriverTests.artifact(mac.build)

        let sampler = ProcessListSampler(secrets: [token])
        _ = try await driver.connect()
        #expect(try await driver.install(artifact, force: false) { _ in } == .installed)
        let launch = try TestApp.launch(token: token, dashboard: .named("hall"), kiosk: nil)
        try await driver.launch(artifact, settings: launch)
        // A second deploy: the running app is quit before the new one opens (`open` returns before
        // the app has started, as the real one does).
        let first = try await appPID(mac)
        try await driver.launch(artifact, settings: launch)
        let (leaks, samples) = sampler.stop()

        #expect(samples > 10, "the sampler must have looked at the process list during the launches")
        #expect(leaks.isEmpty, "the token was readable in a command line: \(leaks)")
        let stored = try #require(
            try PropertyListSerialization.propertyList(
                from: Data(contentsOf: mac.state.appendingPathComponent("defaults/\(Self.bundleID).plist")),
                format: nil) as? [String: Any])
        #expect(stored["HAAccessToken"] as? String == token)
        #expect(stored["HADashboard"] as? String == "hall")

        // The app read its settings from the domain, once per launch, the first instance quit.
        var log: String?
        for _ in 0..<100 {
            log = try? String(
                contentsOf: mac.home.appendingPathComponent("Documents/ha-log.txt"), encoding: .utf8)
            if log?.components(separatedBy: "=== HA Dashboard log session ===").count == 3 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let sessions = AppLogSession.sessions(in: log ?? "")
        #expect(sessions.count == 2)
        #expect(
            sessions.allSatisfy {
                $0.entries.contains { $0.contains("NSUserDefaults read END (url=YES, token=YES)") }
            })
        let second = try await appPID(mac, not: first)
        #expect(first != second)
        #expect(!isRunning(first), "the first instance is gone")
        #expect(
            !FileManager.default.fileExists(atPath: mac.state.appendingPathComponent("killall.log").path),
            "an app that quits when asked is not killed")
        #expect(
            try await driver.appDataFile(artifact, relativePath: "Documents/ha-log.txt")
                == Data((log ?? "").utf8))
    }

    /// The 1.3 Mac app is sandboxed: it reads only its container's preferences, so the global
    /// domain cannot seed it. As the app's script does it is started with `open -n APP --args` and
    /// the settings that are not secret; the token reaches the container's preferences on stdin —
    /// on the very first deploy too, when macOS makes the container only as the app first opens.
    @Test func theSandboxedAppGetsItsSettingsInItsContainerAndNoTokenOnACommandLine() async throws {
        let folder = try TemporaryFolder()
        let mac = try makeMac(in: folder, sandboxed: true)
        defer { stopApp(mac) }
        let driver = Self.driver(mac)
        let artifact = MacDriverTests.artifact(mac.build)
        let container = mac.home.appendingPathComponent("Library/Containers/\(Self.bundleID)/Data")

        let sampler = ProcessListSampler(secrets: [token])
        _ = try await driver.connect()
        #expect(try await driver.install(artifact, force: false) { _ in } == .installed)
        #expect(
            !FileManager.default.fileExists(atPath: container.path), "no container before the first launch")
        let launch = try TestApp.launch(token: token, dashboard: .named("hall"), kiosk: nil)
        try await driver.launch(artifact, settings: launch)
        let (leaks, _) = sampler.stop()
        #expect(leaks.isEmpty, "the token was readable in a command line: \(leaks)")

        let stored = try #require(
            try PropertyListSerialization.propertyList(
                from: Data(
                    contentsOf: container.appendingPathComponent("Library/Preferences/\(Self.bundleID).plist")
                ),
                format: nil) as? [String: Any])
        #expect(stored["HAAccessToken"] as? String == token)
        #expect(
            !FileManager.default.fileExists(
                atPath: mac.state.appendingPathComponent("defaults/\(Self.bundleID).plist").path),
            "nothing in the global domain, which the sandboxed app ignores")
        let opens = try String(contentsOf: mac.state.appendingPathComponent("open.log"), encoding: .utf8)
            .split(separator: "\n")
        #expect(opens.count == 2, "opened once to make the container, then with the token in place: \(opens)")
        #expect(
            opens.allSatisfy { $0.hasPrefix("['-n', ") && $0.contains("'--args', ") && $0.contains("'hall'") }
        )

        // The second launch's session read the token; the log is found in the container.
        var log: String?
        for _ in 0..<100 {
            log = try? String(
                contentsOf: container.appendingPathComponent("Documents/ha-log.txt"), encoding: .utf8)
            if log?.components(separatedBy: "=== HA Dashboard log session ===").count == 3 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let sessions = AppLogSession.sessions(in: log ?? "")
        #expect(sessions.count == 2, "\(log ?? "no log")")
        #expect(
            sessions.last?.entries.contains { $0.contains("(url=YES, token=YES)") } == true, "\(log ?? "")")
        #expect(sessions.last?.entries.contains { $0.contains("dashboard=hall") } == true)
        #expect(
            try await driver.appDataFile(artifact, relativePath: "Documents/ha-log.txt")
                == Data((log ?? "").utf8))
    }
}
