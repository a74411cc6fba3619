import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

struct FakeTunneld: TunneldProbing {
    var state: TunneldState
    var address: String { "127.0.0.1:49151" }
    func state() async -> TunneldState { state }
}

@Suite struct PyMobileDevice3DriverTests {
    let udid = "00008140-001C2D3E4F50801C"
    let tool = "pymobiledevice3"
    let python = "/opt/pmd3/bin/python3"
    let script = "/opt/pmd3/bin/pymobiledevice3"

    func driver(
        _ runner: any ProcessRunner, folder: TemporaryFolder, tunneld: TunneldState,
        executable: String = "pymobiledevice3"
    )
        -> PyMobileDevice3Driver
    {
        PyMobileDevice3Driver(
            configuration: .init(
                label: "iPhone 16 Pro Max", udid: udid,
                commands: PyMobileDevice3Commands(executable: executable),
                scratchDirectory: folder.path("scratch"),
                launcher: PyMobileDevice3Launcher(interpreter: [python], script: script)),
            runner: runner, fileSystem: TestHost.fileSystem, tunneld: FakeTunneld(state: tunneld))
    }

    @Test func installIsCheckedOnTheDeviceAndLaunchGoesThroughTheTunnel() async throws {
        let folder = try TemporaryFolder()
        let app = "/work/build/modern/HA Dashboard.ipa"
        let runner = ScriptedRunner([
            .init(
                executable: tool, arguments: ["usbmux", "list"],
                stdout: try AppleFixture.text("pymobiledevice3-usbmux-list.json")),
            // Mounted already: looked up, and no auto-mount (which would need Apple's server).
            .init(
                executable: tool, arguments: ["mounter", "lookup", "Personalized", "--udid", udid],
                stdout: "{\"ImageSignature\": \"AAAA\"}\n"),
            .init(executable: tool, arguments: ["apps", "install", "--udid", udid, app]),
            .init(
                executable: tool, arguments: ["apps", "list", "--udid", udid],
                stdout: try AppleFixture.text("pymobiledevice3-apps-list.json")),
            .init(executable: tool, arguments: ["version"], stdout: "4.14.6\n"),
            // The token is handed over on stdin: the argument list is the interpreter running
            // pymobiledevice3's own console script, and nothing secret.
            .init(
                executable: python, arguments: ["-c", ScriptedRunner.any, script],
                stdout: "Process launched with pid 3141\n",
                effect: { command in
                    let input = try #require(command.standardInput)
                    let argv = try #require(try JSONSerialization.jsonObject(with: input) as? [String])
                    #expect(
                        argv == [
                            "developer", "dvt", "launch", "--tunnel", "00008140-001C2D3E4F50801C",
                            "--kill-existing",
                            "com.example.hadashboard -HAServerURL http://ha.local:8123 -HAAccessToken \(TestApp.token) "
                                + "-HADashboard 'Living room' -HAKioskMode YES",
                        ])
                    #expect(!command.arguments.joined(separator: " ").contains(TestApp.token))
                }),
            .init(
                executable: tool,
                arguments: ["developer", "dvt", "screenshot", "--tunnel", udid, ScriptedRunner.any],
                effect: AppleFixture.writesPNG),
        ])
        let device = driver(runner, folder: folder, tunneld: .running(udids: [udid]))
        let connected = try await device.connect()
        #expect(connected.name == "iPhone 16 Pro Max")
        #expect(connected.iosVersion == "18.6")
        try await device.prepare()
        #expect(try await device.install(TestApp.artifact(path: app), force: false) { _ in } == .installed)
        try await device.launch(
            TestApp.artifact(path: app), settings: try TestApp.launch())
        #expect(try await device.screenshot().starts(with: ScreenshotFile.pngSignature))
        #expect(runner.remaining == 0)
        #expect(!runner.received[5].description.contains(TestApp.token))
    }

    @Test func aSilentlyFailedInstallIsCaught() async throws {
        let folder = try TemporaryFolder()
        var artifact = TestApp.artifact()
        artifact.buildNumber = "213"
        let runner = ScriptedRunner([
            .init(executable: tool, arguments: ["apps", "install", "--udid", udid, artifact.path]),
            .init(
                executable: tool, arguments: ["apps", "list", "--udid", udid],
                stdout: try AppleFixture.text("pymobiledevice3-apps-list.json")),
        ])
        await #expect {
            try await driver(runner, folder: folder, tunneld: .running(udids: [udid])).install(
                artifact, force: false
            ) { _ in }
        } throws: { error in
            "\(error)".contains("the device has build 212 for com.example.hadashboard, not build 213")
        }
    }

    /// No tunneld: pymobiledevice3's own userspace tunnel (no root), `--userspace --udid`.
    @Test func launchWithoutTunneldGoesThroughTheUserspaceTunnel() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(executable: tool, arguments: ["version"], stdout: "11.45.0\n"),
            .init(
                executable: python, arguments: ["-c", ScriptedRunner.any, script],
                stdout: "Process launched with pid 3141\n",
                effect: { command in
                    let input = try #require(command.standardInput)
                    let argv = try #require(try JSONSerialization.jsonObject(with: input) as? [String])
                    #expect(
                        argv.prefix(7) == [
                            "developer", "dvt", "launch", "--userspace", "--udid", udid, "--kill-existing",
                        ])
                }),
        ])
        let device = driver(runner, folder: folder, tunneld: .notRunning(reason: "connection refused"))
        try await device.launch(TestApp.artifact(), settings: try TestApp.launch())
        #expect(runner.remaining == 0)
        // A runner that cannot keep pymobiledevice3's helper running: the per-step commands above,
        // and the step says so, once.
        let note = try #require(await device.takeStepNote())
        #expect(note.hasPrefix("pymobiledevice3's helper could not start"), "\(note)")
        #expect(note.contains("one pymobiledevice3 process per step"), "\(note)")
        #expect(await device.takeStepNote() == nil)
    }

    @Test func tunneldWithoutThisDeviceLeavesItToTheUserspaceTunnel() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(executable: tool, arguments: ["version"], stdout: "11.45.0\n"),
            .init(
                executable: tool,
                arguments: [
                    "developer", "dvt", "screenshot", "--userspace", "--udid", udid, ScriptedRunner.any,
                ],
                effect: AppleFixture.writesPNG),
        ])
        let png = try await driver(
            runner, folder: folder, tunneld: .running(udids: ["00008020-000A1B2C3D4E002E"])
        ).screenshot()
        #expect(png.starts(with: ScreenshotFile.pngSignature))
    }

    /// The screenshot's path is on the tool's command line, which every user of the machine can read:
    /// it is in a fresh owner-only folder, so nobody can put a link there first for the tool to write
    /// through; and a link the tool itself leaves there is not read through either.
    @Test func theScreenshotPathIsInAnOwnerOnlyFolderAndALinkThereIsNotFollowed() async throws {
        let folder = try TemporaryFolder()
        let secret = folder.path("secret.png")
        try Data(ScreenshotFile.pngSignature + Array("the user's own picture".utf8)).write(to: secret)
        let checksFolder: @Sendable (ProcessCommand) throws -> Void = { command in
            let path = URL(fileURLWithPath: try #require(command.arguments.last))
            let parent = path.deletingLastPathComponent()
            #expect(parent.standardizedFileURL != folder.path("scratch").standardizedFileURL)
            let mode =
                try FileManager.default.attributesOfItem(atPath: parent.path)[.posixPermissions] as? Int
            #expect(mode == 0o700, "the folder is \(String(mode ?? 0, radix: 8))")
        }
        let linksSecret: @Sendable (ProcessCommand) throws -> Void = { command in
            try checksFolder(command)
            try FileManager.default.createSymbolicLink(
                atPath: try #require(command.arguments.last), withDestinationPath: secret.path)
        }
        let arguments = ["developer", "dvt", "screenshot", "--tunnel", udid, ScriptedRunner.any]
        let runner = ScriptedRunner([
            .init(executable: tool, arguments: ["version"], stdout: "11.45.0\n"),
            .init(executable: tool, arguments: arguments, effect: linksSecret),
        ])
        let device = driver(runner, folder: folder, tunneld: .running(udids: [udid]))
        await #expect {
            try await device.screenshot()
        } throws: { error in
            "\(error)".contains("is not a regular file")
        }
        #expect(runner.remaining == 0)
        // Nothing is left in the scratch folder, and the user's file is still there.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path("scratch").path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: secret.path))
    }

    /// Not mounted and no internet: the device ends at the mount step with the reason and the fix.
    @Test func anImageThatCannotBeMountedSaysWhy() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: tool, arguments: ["mounter", "lookup", "Personalized", "--udid", udid],
                stderr: "ERROR Disk image of type: Personalized is not mounted\n"),
            .init(
                executable: tool, arguments: ["mounter", "auto-mount", "--udid", udid],
                status: 1, stderr: "ERROR failed to query manifest: Cannot connect to host tss.apple.com\n"),
        ])
        await #expect {
            try await driver(runner, folder: folder, tunneld: .notRunning(reason: "refused")).prepare()
        } throws: { error in
            let error = error as? AppleDriverError
            return error?.reason.contains("pymobiledevice3 mounter auto-mount failed") == true
                && error?.reason.contains("tss.apple.com") == true
                && error?.fix == PyMobileDevice3Driver.mountFix
        }
        #expect(runner.remaining == 0)
    }

    /// The helper's command line is pymobiledevice3's interpreter and a fixed bootstrap: the server's
    /// source comes on stdin (one JSON string line), and so do the requests, the launch's token in them.
    @Test func theHelpersCommandLineIsTheInterpreterAndAFixedBootstrap() throws {
        let command = PyMobileDevice3Helper.command(
            interpreter: ["/usr/bin/env", "python3"], udid: udid,
            environment: ["USBMUXD_SOCKET_ADDRESS": "/run/x"])
        #expect(command.executable == "/usr/bin/env")
        #expect(command.arguments == ["python3", "-c", PyMobileDevice3Helper.bootstrap])
        #expect(command.environment["HADEPLOY_UDID"] == udid)
        #expect(command.environment["USBMUXD_SOCKET_ADDRESS"] == "/run/x")
        let input = try #require(command.standardInput)
        #expect(input.last == 0x0A && input.filter { $0 == 0x0A }.count == 1)
        let source = try JSONSerialization.jsonObject(with: input.dropLast(), options: .fragmentsAllowed)
        #expect(source as? String == PyMobileDevice3HelperScript.source)
    }

    /// A helper that says hello and then never answers: the request ends at the step's deadline, the
    /// helper is stopped (it ignores its stdin), and the step says what happened and what to raise.
    @Test func aHelperThatDoesNotAnswerIsStoppedAtTheStepsDeadline() async throws {
        let folder = try TemporaryFolder()
        let pidFile = folder.path("helper.pid")
        let interpreter = folder.path("python3")
        try """
        #!/bin/sh
        echo $$ > '\(pidFile.path)'
        echo '{"ready": true, "version": "11.45.0", "python": "3.11.7", "pid": '$$'}'
        exec sleep 600

        """.write(to: interpreter, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: interpreter.path)
        let device = PyMobileDevice3Driver(
            configuration: .init(
                label: "iPhone 16 Pro Max", udid: udid,
                commands: PyMobileDevice3Commands(executable: interpreter.path),
                scratchDirectory: folder.path("scratch"),
                deadlines: DriverDeadlines(steps: [.mount: .seconds(2)]),
                launcher: PyMobileDevice3Launcher(interpreter: [interpreter.path], script: interpreter.path)),
            runner: TestHost.runner, fileSystem: TestHost.fileSystem,
            tunneld: FakeTunneld(state: .notRunning(reason: "refused")))
        #expect(try await device.version() == "11.45.0")
        await #expect {
            _ = try await device.imageMounted()
        } throws: { error in
            let error = error as? AppleDriverError
            return error?.reason == "pymobiledevice3's helper did not answer within 2 s and was stopped"
                && error?.fix == "raise `timeouts.mount` in devices.yaml if the device is slow"
        }
        let pid = try #require(
            Int32(
                try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines)))
        #expect(!TestPlatform.isRunning(pid))
    }

    /// With the real runner and no such program installed: what a Linux host without pymobiledevice3 says.
    @Test func missingPymobiledevice3SaysWhatEachStepNeeds() async throws {
        let folder = try TemporaryFolder()
        let device = driver(
            TestHost.runner, folder: folder, tunneld: .notRunning(reason: "refused"),
            executable: "pymobiledevice3-not-installed-\(UUID().uuidString.prefix(8))")
        await #expect {
            try await device.launch(
                TestApp.artifact(), settings: try TestApp.launch())
        } throws: { error in
            "\(error)"
                == "iPhone 16 Pro Max: launch: launch needs pymobiledevice3: "
                + "`pip install pymobiledevice3` (its own userspace tunnel: no root, no tunneld)"
        }
        await #expect {
            try await device.screenshot()
        } throws: { error in
            "\(error)".contains(
                "screenshot needs pymobiledevice3: `pip install pymobiledevice3` (its own userspace tunnel")
        }
        await #expect {
            try await device.install(TestApp.artifact(), force: false) { _ in }
        } throws: { error in
            "\(error)"
                == "iPhone 16 Pro Max: install: install needs pymobiledevice3 — `pip install pymobiledevice3`, "
                + "or use the usb transport (libimobiledevice) to install"
        }
        let readiness = await device.readiness()
        #expect(readiness.version == nil)
        #expect(readiness.launch?.hasPrefix("launch needs pymobiledevice3: ") == true)
    }
}

/// The live tunneld probe against real sockets: a closed port, and a stand-in tunneld (Python's HTTP server).
@Suite struct TunneldProbeTests {
    @Test func aClosedPortIsNotRunning() async throws {
        let port = try FreePort.pick()
        let state = await TunneldProbe(port: port, timeout: .seconds(5)).state()
        guard case .notRunning = state else {
            Issue.record("expected notRunning, got \(state)")
            return
        }
    }

    @Test func readsTheTunnelsTunneldServes() async throws {
        let folder = try TemporaryFolder()
        try FileManager.default.copyItem(at: AppleFixture.url("tunneld.json"), to: folder.path("index.html"))
        let portFile = folder.path("port")
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = """
            import http.server, functools, sys
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
            server = http.server.HTTPServer(("127.0.0.1", 0), handler)
            open(sys.argv[2] + ".tmp", "w").write(str(server.server_address[1]))
            import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
            server.serve_forever()
            """
        server.arguments = ["python3", "-c", script, folder.url.path, portFile.path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            // SIGKILL: a child started from the test process inherits its blocked SIGTERM.
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        var port: Int?
        for _ in 0..<600 where port == nil {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let served = try #require(port, "python3 http.server did not start within 60 s")
        let state = await TunneldProbe(port: served, timeout: .seconds(20)).state()
        #expect(state == .running(udids: ["00008140-001C2D3E4F50801C"]))
    }
}
