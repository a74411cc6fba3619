import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployDrivers
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
            runner: runner, fileSystem: TestHost.fileSystem)
    }

    /// devicectl's argv is readable by every user, so the token goes into the app's preferences in
    /// its data container first (pulled, merged, pushed back from a 0600 file).
    func copyPreferencesFrom(existing: Bool) -> ScriptedRunner.Step {
        .init(
            executable: "xcrun",
            arguments: [
                "devicectl", "device", "copy", "from", "--device", udid, "--domain-type", "appDataContainer",
                "--domain-identifier", "com.example.hadashboard", "--source",
                "Library/Preferences/com.example.hadashboard.plist", "--destination", any, "--json-output",
                any,
                "--timeout", "60",
            ],
            status: existing ? 0 : 1,
            effect: { command in
                let json = try #require(command.value(after: "--json-output"))
                if existing {
                    let plist = try PropertyListSerialization.data(
                        fromPropertyList: ["HAThemeMode": 2], format: .binary, options: 0)
                    try plist.write(
                        to: URL(fileURLWithPath: try #require(command.value(after: "--destination"))))
                    try Data(#"{"info": {"outcome": "success", "jsonVersion": 2}, "result": {}}"#.utf8).write(
                        to: URL(fileURLWithPath: json))
                } else {
                    try Data(
                        #"{"error": {"code": 1, "domain": "NSCocoaErrorDomain", "userInfo": {"NSLocalizedDescription": {"string": "No such file"}}}, "info": {"outcome": "failed", "jsonVersion": 2}}"#
                            .utf8
                    ).write(to: URL(fileURLWithPath: json))
                }
            })
    }

    func copyPreferencesTo() -> ScriptedRunner.Step {
        .init(
            executable: "xcrun",
            arguments: [
                "devicectl", "device", "copy", "to", "--device", udid, "--domain-type", "appDataContainer",
                "--domain-identifier", "com.example.hadashboard", "--source", any, "--destination",
                "Library/Preferences/com.example.hadashboard.plist", "--json-output", any, "--timeout", "60",
            ],
            effect: { command in
                let source = try #require(command.value(after: "--source"))
                let mode = try FileManager.default.attributesOfItem(atPath: source)[.posixPermissions] as? Int
                #expect(mode == 0o600)
                let plist = try #require(
                    try PropertyListSerialization.propertyList(
                        from: Data(contentsOf: URL(fileURLWithPath: source)), format: nil) as? [String: Any])
                #expect(plist["HAAccessToken"] as? String == TestApp.token)
                #expect(!command.description.contains(TestApp.token))
                try Data(#"{"info": {"outcome": "success", "jsonVersion": 2}, "result": {}}"#.utf8).write(
                    to: URL(fileURLWithPath: try #require(command.value(after: "--json-output"))))
            })
    }

    /// No UDID set (`${IPAD_PRO_DEVICECTL_ID:-}`): found by its model, as the app's script finds its
    /// iPad Pro — the one physical device devicectl lists of that model; several are said with the
    /// key to set, and nothing else runs.
    @Test func withoutAUDIDTheOnePhysicalDeviceOfItsModelIsFound() async throws {
        let folder = try TemporaryFolder()
        let list = ScriptedRunner.Step(
            executable: "xcrun",
            arguments: ["devicectl", "list", "devices", "--json-output", any, "--timeout", "30"],
            effect: AppleFixture.writes("devicectl-list-devices.json", at: "--json-output"))
        func driver(_ model: String, _ runner: ScriptedRunner) -> DevicectlDriver {
            DevicectlDriver(
                configuration: .init(
                    label: "ipadpro", device: "", model: model, host: .macOS,
                    scratchDirectory: folder.path("scratch")),
                runner: runner, fileSystem: TestHost.fileSystem)
        }
        let one = driver(
            "iPad mini (5th",
            ScriptedRunner([
                list,
                .init(
                    executable: "xcrun",
                    arguments: [
                        "devicectl", "device", "info", "details", "--device",
                        "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF",
                        "--json-output", any, "--timeout", "30",
                    ],
                    effect: AppleFixture.writes("devicectl-info-details.json", at: "--json-output")),
            ]))
        #expect(try await one.connect().udid == udid, "the hardware UDID it reports, for the profile check")

        await #expect {
            try await driver("iPad mini", ScriptedRunner([list])).connect()
        } throws: { error in
            let text = "\(error)"
            return text.contains("devicectl lists 2 physical devices of model iPad mini")
                && text.contains("A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF") && text.contains("udid in .env")
        }
        await #expect {
            try await driver("iPad Pro", ScriptedRunner([list])).connect()
        } throws: { "\($0)".contains("devicectl lists no physical iPad Pro") }
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
            copyPreferencesFrom(existing: true),
            copyPreferencesTo(),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "process", "launch", "--device", udid, "--terminate-existing",
                    "--json-output", any,
                    "--timeout", "60", "com.example.hadashboard", "--",
                ] + TestApp.publicArguments,
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
            TestApp.artifact(path: app), settings: try TestApp.launch())
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
            copyPreferencesFrom(existing: false),
            copyPreferencesTo(),
            .init(
                executable: "xcrun",
                arguments: [
                    "devicectl", "device", "process", "launch", "--device", udid, "--terminate-existing",
                    "--json-output", any,
                    "--timeout", "60", "com.example.hadashboard", "--",
                ] + TestApp.publicArguments,
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
                TestApp.artifact(), settings: try TestApp.launch())
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
