import Foundation
import HADeployCore
import HADeployKit
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployStatus
@testable import Versioning

/// A backend that implements only the deploy verbs, as simctl, rosettasim and devicectl do: its
/// status comes from the driver contract's default. Its `connect` can hang (a device that never answers).
struct DeployOnlyDriver: DeviceDriver {
    var hangs = false
    var log: Data?

    func connect() async throws -> ConnectedDevice {
        if hangs { try await Task.sleep(for: .seconds(600)) }
        return ConnectedDevice(
            udid: "SIM-1", name: "iPad simulator", productType: nil, iosVersion: "17.5", arch: nil)
    }
    func prepare() async throws {}
    func install(_ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void)
        async throws -> InstallOutcome
    { .unchanged }
    func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {}
    func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] { [] }
    func screenshot() async throws -> Data { Data() }
    func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? { log }
}

@Suite struct StatusExecutorTests {
    static let log = """
        === HA Dashboard log session ===
        Device: iPad / iOS 17.5
        Date: 2026-11-23 10:01:02 +0000

        +  12.0ms  [startup] isConfigured=YES
        10:01:04.100  INFO [conn] Lovelace config received: 2 views, 7 cards, strategy=none
        """

    func plan(_ ids: [String], deadline: Double = 2) throws -> StatusPlan {
        let devices = try ids.map { id -> DeviceStatusPlan in
            var device = try DriverTestPlans.plan("sim").plan
            device.id = id
            device.availability = .available
            return DeviceStatusPlan(
                device: device,
                expected: ExpectedBuild(
                    bundleID: "com.example.hadashboard", executable: "HADashboard", marketingVersion: "1.4.0",
                    buildNumber: "212", source: "git tags"),
                lastDeploy: nil)
        }
        return StatusPlan(
            version: GitVersion(
                marketingVersion: "1.4.0", buildNumber: 212, tag: "v1.4.0", commitsSinceTag: 0, dirty: false,
                shallow: false),
            devices: devices, deadlineSeconds: deadline, thresholds: StatusThresholds())
    }

    @Test func aBackendWithoutStatusVerbsSaysWhatItCannotTellAndReadsTheLog() async throws {
        let report = await StatusExecutor(
            plan: try plan(["sim"]), driver: { _ in DeployOnlyDriver(log: Data(Self.log.utf8)) },
            clock: TestHost.clock
        ).run()
        let device = try #require(report.devices.first)
        #expect(device.reachable && device.ios == .known("17.5"))
        #expect(
            device.battery.reason?.contains("not available from the simctl backend") == true,
            "\(device.battery)")
        #expect(device.installed.reason?.contains("not available from the simctl backend") == true)
        #expect(device.build == .unknown)
        #expect(device.dashboard.value?.summary == "loaded: 2 views, 7 cards, strategy=none")
        #expect(device.dashboard.value?.loaded == true)
        // Nothing known is wrong: no attention, exit 0.
        #expect(device.attention.isEmpty, "\(device.attention)")
        #expect(report.exitCode == 0)
    }

    @Test func aDeviceThatNeverAnswersIsNamedAtItsDeadlineAndTheOthersStillAnswer() async throws {
        let started = ContinuousClock.now
        let report = await StatusExecutor(
            plan: try plan(["stuck", "fine"], deadline: 1),
            driver: { device in DeployOnlyDriver(hangs: device.id == "stuck", log: nil) },
            clock: TestHost.clock
        ).run()
        // Far less than the stuck connect's 600 s (a loaded machine schedules late).
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(report.devices.map(\.id) == ["stuck", "fine"])
        let stuck = report.devices[0]
        #expect(!stuck.reachable && stuck.unreachable?.hasPrefix("no answer within 1 s") == true)
        #expect(report.devices[1].reachable)
        #expect(report.devices[1].dashboard.reason == "the app has no log yet (never launched)")
        #expect(report.exitCode == 3)
    }

    @Test func aBootAfterTheLastDeployIsARestartAndAMissingImageIsOneToo() {
        let deployed = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(
            StatusExecutor.rebooted(.known(BootState(bootedAt: deployed + 60)), since: deployed)
                == .known(true))
        #expect(
            StatusExecutor.rebooted(.known(BootState(bootedAt: deployed - 60)), since: deployed)
                == .known(false))
        #expect(
            StatusExecutor.rebooted(.known(BootState(developerImageMounted: false)), since: deployed)
                == .known(true))
        #expect(StatusExecutor.rebooted(.known(BootState(bootedAt: deployed + 60)), since: nil).value == nil)
    }
}
