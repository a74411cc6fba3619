import DeployModel
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HomeAssistant
import MobileDevice
import TestSupport
import Testing
import VirtualDevice

@testable import HADeployKit

/// The Home Assistant evidence for a device whose app has its device integration on
/// (`-HAAutoRegister YES`): the verifier and the USB driver in this process, against a twin and a
/// real Home Assistant 2024.3.3 with mobile_app.
@Suite(.serialized)
struct HomeAssistantEvidenceTests {
    /// The driver of a build whose container cannot be read (not development-signed): the log is
    /// no evidence, so only Home Assistant can prove the load.
    final class SealedContainer: FakeDriver, @unchecked Sendable {
        init(usb: USBDriver) { super.init(forwardingTo: usb) }
        override func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws
            -> [URL]
        {
            []
        }
        override func screenshot() async throws -> Data { Data() }
        override func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
            throw AppDataUnavailable("\(type(of: self)) cannot read the app's data container")
        }
    }

    struct Scene {
        let world: DeployWorld
        let usb: USBDriver
        let artifact: Artifact
        let dashboard: String
        let verifier: HomeAssistantVerifier
    }

    static func scene() async throws -> Scene {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        let dashboard = try await EvidenceEndToEndTests.makeDashboard(world.ha)
        // The app installed (and the image mounted) the usual way.
        let first = try await world.deploy(
            ["mini4", "--dashboard", dashboard] + EvidenceEndToEndTests.arguments)
        #expect(first.status == 0, "\(first.stderr)")
        try world.routeThisProcess()
        let usb = USBDriver(
            udid: try requireValue(world.udids["mini4"]), name: "mini4",
            options: USBDeviceOptions(
                fileSystem: TestHost.fileSystem, clock: TestHost.clock,
                stateDirectory: world.root.appendingPathComponent("usb-state")))
        let artifact = try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(
            world.root.appendingPathComponent("artifacts/modern/HADashboard.app"), flavour: "modern")
        let verifier = try HomeAssistantVerifier(
            server: world.ha.url, token: Secret(world.ha.token), clock: TestHost.clock)
        return Scene(world: world, usb: usb, artifact: artifact, dashboard: dashboard, verifier: verifier)
    }

    /// One launch as the pipeline does it: evidence prepared, launch, wait.
    static func launch(
        _ scene: Scene, driver: any DeviceDriver, told: String, expected: String,
        timeout: Duration = .seconds(20)
    ) async throws -> LoadEvidenceVerifier.Outcome {
        let name = try await driver.connect().name
        let check = LoadEvidenceVerifier(
            driver: driver, verifier: scene.verifier,
            request: LoadEvidenceVerifier.Request(
                artifact: scene.artifact, dashboard: expected, deviceName: name,
                homeAssistantIntegration: true,
                deployID: UUID().uuidString, timeout: timeout),
            clock: TestHost.clock)
        let prepared = await check.prepare()
        let launchedAt = Date()
        let settings = LaunchSettings(
            credentials: .homeAssistant(
                server: .value(scene.world.ha.url), token: SecretReference(environment: "HA_TOKEN")),
            dashboard: .named(told), kiosk: nil, autoRegister: true, appSettings: [:], deployID: nil,
            deviceID: nil)
        try await driver.launch(
            scene.artifact,
            settings: try ResolvedLaunch(settings, environment: ["HA_TOKEN": scene.world.ha.token]))
        return await check.wait(prepared, launchedAt: launchedAt)
    }

    @Test func anUnchangedDashboardIsStillReportedAndAnotherOneIsNot() async throws {
        let scene = try await Self.scene()
        defer {
            Task {
                await scene.verifier.close()
                await scene.world.shutdown()
            }
        }
        // First launch with the integration on: the app registers and reports; the log decides,
        // Home Assistant agrees.
        let registering = try await Self.launch(
            scene, driver: scene.usb, told: scene.dashboard, expected: scene.dashboard)
        #expect(registering.evidence == [.appLog, .homeAssistant], "\(registering.verification)")

        // The same dashboard again, from a build whose log cannot be read: active_dashboard keeps
        // its value, and the sentinel still makes the report count.
        let sealed = SealedContainer(usb: scene.usb)
        let unchanged = try await Self.launch(
            scene, driver: sealed, told: scene.dashboard, expected: scene.dashboard)
        guard case .loaded = unchanged.verification else {
            Issue.record("not verified through Home Assistant: \(unchanged.verification)")
            return
        }
        #expect(unchanged.evidence == [.homeAssistant])

        // Told another dashboard than the one expected: Home Assistant shows what the app reports.
        let other = try await EvidenceEndToEndTests.makeDashboard(scene.world.ha)
        let wrong = try await Self.launch(
            scene, driver: sealed, told: other, expected: scene.dashboard, timeout: .seconds(6))
        guard case .notLoaded(let reason) = wrong.verification else {
            Issue.record("a different dashboard must not verify: \(wrong.verification)")
            return
        }
        #expect(reason.contains("active_dashboard of"), "\(reason)")
        #expect(reason.contains("is '\(other)', expected '\(scene.dashboard)'"), "\(reason)")
        #expect(!reason.contains(scene.world.ha.token))
    }
}
