import Foundation
import HADeployCore
import Testing

@testable import HADeployKit

@Suite struct DevicectlDriverTests {
    let udid = "00008020-000A1B2C3D4E002E"
    let any = ScriptedRunner.any

    func driver(_ runner: ScriptedRunner, folder: TemporaryFolder, host: HostPlatform = .macOS)
        -> DevicectlDriver
    {
        DevicectlDriver(
            configuration: .init(
                label: "iPad mini 5", device: udid, host: host, scratchDirectory: folder.path("scratch")),
            runner: runner)
    }

    @Test func connectInstallLaunchThroughJSONOutputFiles() async throws {
        let folder = try TemporaryFolder()
        let app = "/work/build/modern/HA Dashboard.app"
        let runner = ScriptedRunner([
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "info", "details", "--device", udid, "--json-output", any,
                    "--timeout", "30",
                ],
                effect: AppleFixture.writes("devicectl-info-details.json", at: "--json-output")),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "install", "app", "--device", udid, "--json-output", any,
                    "--timeout", "60", app,
                ],
                effect: AppleFixture.writes("devicectl-install-app.json", at: "--json-output")),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "process", "launch", "--device", udid, "--terminate-existing",
                    "--json-output", any,
                    "--timeout", "60", "com.example.hadashboard", "--",
                ] + TestApp.arguments,
                effect: AppleFixture.writes("devicectl-process-launch.json", at: "--json-output")),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "process", "signal", "--device", udid, "--pid", "7401", "--signal",
                    "SIGTERM",
                    "--json-output", any, "--timeout", "20",
                ],
                effect: AppleFixture.writes("devicectl-info-details.json", at: "--json-output")),
        ])
        let device = driver(runner, folder: folder)
        let connected = try await device.connect()
        #expect(
            connected
                == ConnectedDevice(
                    udid: udid, name: "iPad mini 5", productType: "iPad11,1", iosVersion: "26.0",
                    arch: "arm64e"))
        try await device.prepare()
        #expect(try await device.install(TestApp.artifact(path: app), force: false) { _ in } == .installed)
        try await device.launch(
            TestApp.artifact(path: app), arguments: TestApp.arguments, secrets: [TestApp.token])
        #expect(await device.launchedProcessID == 7401)
        try await device.terminate()
        #expect(runner.remaining == 0)
        // The launch result echoes the arguments, token included: no JSON output file may stay behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path("scratch").path).isEmpty)
        // Ours is a backstop behind devicectl's own --timeout.
        #expect(runner.timeouts[0] == .seconds(45))
    }

    @Test func devicectlsOwnErrorIsQuotedWithTheTokenRedacted() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "info", "details", "--device", udid, "--json-output", any,
                    "--timeout", "30",
                ],
                status: 1,
                effect: AppleFixture.writes("devicectl-error-device-not-found.json", at: "--json-output")),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "process", "launch", "--device", udid, "--terminate-existing",
                    "--json-output", any,
                    "--timeout", "60", "com.example.hadashboard", "--",
                ] + TestApp.arguments,
                status: 1,
                effect: { command in
                    let json = """
                        {"error": {"code": 10002, "domain": "com.apple.dt.CoreDeviceError", "userInfo": {
                          "NSLocalizedDescription": {"string": "Failed to launch with arguments -HAAccessToken \(TestApp.token)."}}},
                         "info": {"outcome": "failed", "jsonVersion": 2}}
                        """
                    try Data(json.utf8).write(
                        to: URL(fileURLWithPath: try #require(command.value(after: "--json-output"))))
                }),
        ])
        let device = driver(runner, folder: folder)
        await #expect {
            try await device.connect()
        } throws: { error in
            "\(error)".hasPrefix(
                "iPad mini 5: connect: devicectl: The specified device was not found. (com.apple.dt.CoreDeviceError 1000) — connect it by USB"
            )
        }
        await #expect {
            try await device.launch(
                TestApp.artifact(), arguments: TestApp.arguments, secrets: [TestApp.token])
        } throws: { error in
            "\(error)".contains("Failed to launch with arguments -HAAccessToken ***.")
                && !"\(error)".contains(TestApp.token)
        }
    }

    @Test func onLinuxDevicectlIsNamedWithThePlatform() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([])
        await #expect {
            try await driver(runner, folder: folder, host: .linux).install(TestApp.artifact(), force: false) {
                _ in
            }
        } throws: { error in
            "\(error)".contains("xcrun devicectl is part of Xcode and only runs on macOS; this host is Linux")
        }
        #expect(runner.received.isEmpty)
    }

    @Test func screenshotSaysWhatToUseInstead() async throws {
        let folder = try TemporaryFolder()
        await #expect {
            try await driver(ScriptedRunner([]), folder: folder).screenshot()
        } throws: { error in
            "\(error)".contains("devicectl cannot take screenshots")
                && "\(error)".contains("pip install pymobiledevice3")
        }
    }
}
