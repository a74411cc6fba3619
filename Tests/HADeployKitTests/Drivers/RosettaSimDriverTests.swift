import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import HADeployKit

@Suite struct RosettaSimDriverTests {
    let ios9 = "6B2F1C0A-93A1-4E47-9C1D-2A4E3F5B9D01"
    let tool = "/opt/rosetta/rosettasim-ctl"

    func driver(_ runner: ScriptedRunner, folder: TemporaryFolder, configured: Bool = true)
        -> RosettaSimDriver
    {
        RosettaSimDriver(
            configuration: .init(
                label: "iPad Pro (iOS 9.3 simulator)",
                selector: SimulatorSelector(udid: nil, deviceType: "iPad Pro", runtime: "iOS 9.3"),
                host: .macOS, commands: configured ? RosettaSimCommands(executable: tool) : nil,
                simulatorDevices: folder.path("Devices"), diagnosticReports: folder.path("DiagnosticReports"),
                scratchDirectory: folder.path("scratch")),
            runner: runner, fileSystem: TestHost.fileSystem)
    }

    /// What the app's first launch does on the simulator: its data container appears.
    static func makeContainer(_ folder: TemporaryFolder, udid: String)
        -> @Sendable (ProcessCommand) throws -> Void
    {
        let root = folder.path(
            "Devices/\(udid)/data/Containers/Data/Application/5C4B3A29-1807-4F6E-9D5C-4B3A29180706")
        return { _ in
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let metadata = try PropertyListSerialization.data(
                fromPropertyList: ["MCMMetadataIdentifier": "com.example.hadashboard"], format: .xml,
                options: 0)
            try metadata.write(
                to: root.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist"))
        }
    }

    @Test func bootsInstallsAndHandsTheArgumentsOverAsPreferences() async throws {
        let folder = try TemporaryFolder()
        let runner = ScriptedRunner([
            .init(
                executable: tool, arguments: ["list", "-j", "devices"],
                stdout: try AppleFixture.text("simctl-list-devices.json")),
            .init(executable: tool, arguments: ["boot", ios9], stdout: "Device state: Booted\n"),
            .init(executable: tool, arguments: ["install", ios9, "/work/build/rosettasim/HA Dashboard.app"]),
            .init(executable: tool, arguments: ["terminate", ios9, "com.example.hadashboard"], status: 1),
            // No data container yet: launched once to create it, then stopped again.
            .init(
                executable: tool, arguments: ["launch", ios9, "com.example.hadashboard"],
                effect: Self.makeContainer(folder, udid: ios9)),
            .init(executable: tool, arguments: ["terminate", ios9, "com.example.hadashboard"]),
            .init(executable: tool, arguments: ["launch", ios9, "com.example.hadashboard"]),
        ])
        let sim = driver(runner, folder: folder)
        #expect(try await sim.connect().arch == "x86_64")
        try await sim.prepare()
        _ = try await sim.install(
            TestApp.artifact(path: "/work/build/rosettasim/HA Dashboard.app"), force: false
        ) { _ in }
        try await sim.launch(TestApp.artifact(), settings: try TestApp.launch())
        #expect(runner.remaining == 0)

        let plist = folder.path(
            "Devices/\(ios9)/data/Containers/Data/Application/5C4B3A29-1807-4F6E-9D5C-4B3A29180706/Library/Preferences/com.example.hadashboard.plist"
        )
        let values = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: plist), format: nil)
                as? [String: Any])
        #expect(Set(values.keys) == ["HAServerURL", "HAAccessToken", "HADashboard", "HAKioskMode"])
        #expect(values["HAServerURL"] as? String == "http://ha.local:8123")
        #expect(values["HAAccessToken"] as? String == TestApp.token)
        #expect(values["HADashboard"] as? String == "Living room")
        #expect(values["HAKioskMode"] as? Bool == true, "a boolean, as on the jailbroken iPads and the Mac")
        let mode = try FileManager.default.attributesOfItem(atPath: plist.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(runner.received.allSatisfy { !$0.arguments.joined().contains(TestApp.token) })
    }

    @Test func unsetRosettaSimCtlNamesTheEnvKey() async throws {
        let folder = try TemporaryFolder()
        await #expect {
            try await driver(ScriptedRunner([]), folder: folder, configured: false).connect()
        } throws: { error in
            "\(error)".contains("ROSETTASIM_CTL is not set")
                && (error as? AppleDriverError)?.kind == .toolMissing
        }
    }

    /// The plan names the tool (`rosettasim-ctl`); the run resolves it from its own ROSETTASIM_CTL.
    @Test func makeTakesTheToolFromEnv() throws {
        let variables = ["ROSETTASIM_CTL": "~/rosetta/rosettasim-ctl", "HOME": "/Users/dev"]
        let plan = try DriverTestPlans.plan("sim-ios103", variables: variables)
        guard let simulator = try Backends.configuration(RosettaSimBackend.self, of: plan.plan) else {
            Issue.record("not a rosettasim plan: \(plan.plan.backend)")
            return
        }
        #expect(simulator.tool == "rosettasim-ctl", "a name in the plan, never a path")
        let driver = try #require(
            try DriverRegistry(
                host: .macOS, environment: variables, runner: ScriptedRunner([]),
                fileSystem: FakeFileSystem(),
                clock: FakeClock()
            ).driver(
                for: plan.plan)
                as? RosettaSimDriver)
        #expect(driver.configuration.commands?.executable == "/Users/dev/rosetta/rosettasim-ctl")
        #expect(driver.configuration.selector.deviceType == "iPad Pro (10.5-inch)")
        #expect(driver.configuration.selector.runtime == "iOS 10.3")
    }
}
