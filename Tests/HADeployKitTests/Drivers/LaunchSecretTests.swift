import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

/// The access token must never be in a process's arguments, where every local user can read it
/// (`/proc/PID/cmdline`). These launches run real processes while a sampler watches the process list.
@Suite(.serialized) struct LaunchSecretTests {
    let udid = "00008140-001C2D3E4F50801C"
    let token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.secret-\(UUID().uuidString)"

    /// A stand-in for pymobiledevice3's console script — the iOS 17 developer tunnel it would talk to
    /// cannot exist on Linux — shaped like the one pip writes: `#!<python>` and a `main()` reading
    /// `sys.argv`. It records the argv it was given (so the test sees the token did arrive) and
    /// stays alive a moment so the sampler sees its process.
    func standIn(in folder: TemporaryFolder) throws -> (script: URL, record: URL) {
        let python = try #require(TestHost.runner.locate("python3"), "python3 is needed for this test")
        let record = folder.path("argv.json")
        let script = folder.path("bin/pymobiledevice3")
        try FileManager.default.createDirectory(
            at: script.deletingLastPathComponent(), withIntermediateDirectories: true)
        let source = """
            #!\(python)
            # -*- coding: utf-8 -*-
            import json, sys, time
            def main():
                if sys.argv[1:] == ["version"]:
                    print("11.45.0")
                    return 0
                json.dump(sys.argv[1:], open(\(String(reflecting: record.path)), "w"))
                time.sleep(0.5)
                print("Process launched with pid 4242")
                return 0
            if __name__ == "__main__":
                sys.exit(main())
            """
        try Data(source.utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return (script, record)
    }

    func driver(_ executable: String, folder: TemporaryFolder) -> PyMobileDevice3Driver {
        PyMobileDevice3Driver(
            configuration: .init(
                label: "iPhone 16 Pro Max", udid: udid,
                commands: PyMobileDevice3Commands(executable: executable),
                scratchDirectory: folder.path("scratch")),
            runner: TestHost.runner, fileSystem: TestHost.fileSystem,
            tunneld: FakeTunneld(state: .running(udids: [udid])))
    }

    @Test func pymobiledevice3LaunchKeepsTheTokenOutOfEveryCommandLine() async throws {
        let folder = try TemporaryFolder()
        let (script, record) = try standIn(in: folder)
        let device = driver(script.path, folder: folder)

        let sampler = ProcessListSampler(secrets: [token])
        try await device.launch(
            TestApp.artifact(),
            settings: try TestApp.launch(token: token, dashboard: .named("wall"), kiosk: nil))
        let (leaks, samples) = sampler.stop()

        #expect(samples > 10, "the sampler must have looked at the process list during the launch")
        #expect(leaks.isEmpty, "the token was readable in a command line: \(leaks.count) sightings")
        // And it did reach the tool, through stdin, as the one launch line dvt launch splits.
        let argv = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: record)) as? [String])
        #expect(argv.prefix(6) == ["developer", "dvt", "launch", "--tunnel", udid, "--kill-existing"])
        #expect(argv.last?.contains("-HAAccessToken \(token)") == true)
    }

    @Test func aPymobiledevice3ThatIsNotAPythonScriptIsRefusedRatherThanGivenTheToken() async throws {
        let folder = try TemporaryFolder()
        let binary = folder.path("pymobiledevice3")
        try Data("#!/bin/sh\necho 11.45.0\n".utf8).write(to: binary)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        let device = driver(binary.path, folder: folder)
        await #expect {
            try await device.launch(TestApp.artifact(), settings: try TestApp.launch(token: token))
        } throws: { error in
            let text = "\(error)"
            return text.contains("not run by Python") && text.contains("never on a command line")
                && !text.contains(token)
        }
    }
}
