import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployKit
@testable import HADeployReporting
@testable import Versioning

/// The orchestration logic (parallelism, deadlines, retries, locks, reports, exit codes) with a
/// scripted in-process driver (TestSupport's `ScriptedDriver`). End-to-end runs against virtual devices live in the E2E tests; this
/// driver is a test double for the pure middle, not a stand-in for a transport.
struct DeployExecutorTests {
    struct InstallRefused: Error, CustomStringConvertible {
        var description: String { "APIInternalError: the device refused the package" }
    }

    static let yaml = """
        flavours:
          modern: {archs: [arm64], deployment_target: "15.0"}
        devices:
          a: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-A, timeouts: {install: 0.3}}
          b: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-B}
          c: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: UDID-C}
        """

    func makePlan(verify: Bool = false, kiosk: Bool? = nil) throws -> DeployPlan {
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: Self.yaml, file: "devices.yaml")
        let planner = DeployPlanner(
            matrix: matrix, variables: ["HA_SERVER": "http://127.0.0.1:1", "HA_TOKEN": "tok-SECRET-123"],
            topology: Topology(host: .linux))
        let version = GitVersion(
            marketingVersion: "1.2.3", buildNumber: 7, tag: "v1.2.3", commitsSinceTag: 0, dirty: false,
            shallow: false)
        return try planner.plan(
            options: DeployOptions(targets: ["all"], kiosk: kiosk, verify: verify, screenshots: true),
            version: version,
            deployID: "deploy-1")
    }

    func environment(
        drivers: [String: ScriptedDriver], report: URL?, locks: URL, failFast: Bool = false, jobs: Int? = nil,
        provisioning: ProvisioningProfile? = nil
    ) -> DeployEnvironment {
        var artifact = Artifact(
            path: "/nonexistent.app", bundleID: "com.example.hadashboard", executable: "HADashboard",
            marketingVersion: "1.2.3", buildNumber: "7", flavour: "modern", archs: ["arm64"])
        artifact.provisioning = provisioning
        return DeployEnvironment(
            driver: { plan in drivers[plan.id]! }, verifier: nil,
            verificationSkippedReason: "no Home Assistant configured",
            artifacts: ["modern": artifact],
            reporter: PlainReporter(output: RecordingOutputSink(), clock: TestHost.clock),
            reportDirectory: report,
            lockDirectory: locks, jobs: jobs, failFast: failFast, fileSystem: TestHost.fileSystem,
            clock: TestHost.clock, secrets: Self.secrets)
    }

    /// The run's environment: the token the plans name (`env:HA_TOKEN`).
    static let secrets = ["HA_TOKEN": "tok-SECRET-123"]

    @Test func oneDeviceFailingDoesNotStopTheOthersAndTheReportSaysWhy() async throws {
        let root = try temporaryDirectory()
        let drivers = [
            "a": ScriptedDriver(), "b": ScriptedDriver(installError: InstallRefused()), "c": ScriptedDriver(),
        ]
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(drivers: drivers, report: root.appendingPathComponent("r"), locks: root)
        ).run()
        #expect(report.exitCode == 1)
        #expect(report.results.map(\.id) == ["a", "b", "c"])
        #expect(report.results.map(\.outcome) == [.unverified, .failed, .unverified])
        #expect(report.results[1].failedStep == "install")
        #expect(report.results[1].reason?.contains("refused the package") == true)
        // The launch really got the token; the report never shows it.
        #expect(drivers["a"]!.launched.first?.contains("tok-SECRET-123") == true)
        let summary = try String(contentsOf: root.appendingPathComponent("r/summary.json"), encoding: .utf8)
        let junit = try String(contentsOf: root.appendingPathComponent("r/junit.xml"), encoding: .utf8)
        let html = try String(contentsOf: root.appendingPathComponent("r/index.html"), encoding: .utf8)
        for text in [summary, junit, html] { #expect(!text.contains("tok-SECRET-123")) }
        #expect(junit.contains("<failure message=\"install failed: APIInternalError"))
        let decoded = try JSONDecoder.iso.decode(DeployReport.self, from: Data(summary.utf8))
        #expect(decoded.results.count == 3)
        #expect(
            FileManager.default.fileExists(atPath: root.appendingPathComponent("r/screenshots/a.png").path))
    }

    struct NoTunnelTool: Error, HostLimitationClassifying, CustomStringConvertible {
        var isHostLimitation: Bool { true }
        var description: String { "pymobiledevice3 was not found: make peers-demo installs it" }
    }

    /// Before: a device whose launch could not run on this host (no pymobiledevice3) ended "installed
    /// only" and the run exited 0, so CI took a device that never launched for a success.
    @Test func aDeviceInstalledButNotLaunchedFailsTheRun() async throws {
        let root = try temporaryDirectory()
        let drivers = [
            "a": ScriptedDriver(launchError: NoTunnelTool()), "b": ScriptedDriver(), "c": ScriptedDriver(),
        ]
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(drivers: drivers, report: root.appendingPathComponent("r"), locks: root)
        ).run()
        #expect(report.results.map(\.outcome) == [.installedOnly, .unverified, .unverified])
        #expect(report.results[0].failedStep == "launch")
        #expect(report.exitCode == 1, "a device that was not launched is not a success")
        let junit = try String(contentsOf: root.appendingPathComponent("r/junit.xml"), encoding: .utf8)
        #expect(junit.contains("failures=\"1\""), "\(junit)")
        #expect(
            junit.contains("<failure message=\"installed only: launch failed: pymobiledevice3"), "\(junit)")
    }

    struct LaunchRefused: Error, CustomStringConvertible {
        var description: String { "debugserver answered: the request to open the app was denied" }
    }

    /// Kiosk mode asks iOS 12.2+ for Guided Access, which can keep the app from opening (the app's
    /// script warns of it): a kiosk launch that iOS refused names it and the way out; a launch
    /// without kiosk does not.
    @Test func aRefusedKioskLaunchNamesGuidedAccess() async throws {
        let root = try temporaryDirectory()
        for kiosk in [true, false] {
            let drivers = [
                "a": ScriptedDriver(launchError: LaunchRefused()), "b": ScriptedDriver(),
                "c": ScriptedDriver(),
            ]
            let report = await DeployExecutor(
                plan: try makePlan(kiosk: kiosk),
                environment: environment(drivers: drivers, report: nil, locks: root)
            ).run()
            let a = report.results[0]
            #expect(a.outcome == .failed && a.failedStep == "launch", "\(a)")
            #expect(
                (a.reason ?? "").contains("Guided Access") == kiosk
                    && (a.reason ?? "").contains("--no-kiosk") == kiosk, "\(a.reason ?? "")")
        }
    }

    /// A device known by its CoreDevice identifier (devicectl) reports its hardware UDID when it
    /// connects — the one a profile lists: the build is checked against it there, before the upload.
    @Test func aCoreDeviceIsCheckedByTheHardwareUDIDItReports() async throws {
        let root = try temporaryDirectory()
        let listed = "00008020-000A1B2C3D4E0001"
        let profile = ProvisioningProfile(
            name: "HADashboard Development", uuid: "5D1C0F3E-0000-4000-8000-000000000001",
            expirationDate: Date().addingTimeInterval(86_400 * 30), provisionedDevices: [listed],
            applicationIdentifier: "ABCDE12345.com.example.hadashboard")
        let drivers = ["a": ScriptedDriver(), "b": ScriptedDriver(), "c": ScriptedDriver()]
        drivers["a"]!.reportedUDID = "00008020-000A1B2C3D4E002E"
        drivers["b"]!.reportedUDID = listed
        // Not a hardware UDID: nothing to check it against.
        drivers["c"]!.reportedUDID = "4B2C9F4A-2D1E-4C55-9E0B-6A7F1D2C3B4A"
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(drivers: drivers, report: nil, locks: root, provisioning: profile)
        ).run()
        let a = report.results[0]
        #expect(a.outcome == .failed && a.failedStep == "install", "\(a)")
        #expect(
            (a.reason ?? "").contains("00008020-000A1B2C3D4E002E")
                && (a.reason ?? "").contains("nothing was sent"), "\(a)")
        #expect(drivers["a"]!.installs == 0, "nothing sent to a device the build cannot run on")
        #expect(report.results[1].outcome == .unverified && drivers["b"]!.installs == 1)
        #expect(report.results[2].outcome == .unverified)
    }

    @Test func aStalledInstallHitsItsDeadlineWithTheStepNamed() async throws {
        let root = try temporaryDirectory()
        let drivers = [
            "a": ScriptedDriver(installDelay: .seconds(30)), "b": ScriptedDriver(), "c": ScriptedDriver(),
        ]
        let report = await DeployExecutor(
            plan: try makePlan(), environment: environment(drivers: drivers, report: nil, locks: root)
        ).run()
        #expect(report.results[0].outcome == .failed)
        #expect(report.results[0].failedStep == "install")
        #expect(report.results[0].reason?.contains("did not finish within") == true)
        #expect(report.results[1].outcome == .unverified)
    }

    @Test func transientConnectFaultsAreRetriedAfterReprobing() async throws {
        let root = try temporaryDirectory()
        let flaky = ScriptedDriver(connectFailures: 2)
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(
                drivers: ["a": flaky, "b": ScriptedDriver(), "c": ScriptedDriver()], report: nil, locks: root)
        ).run()
        #expect(report.results[0].outcome == .unverified)
        #expect(flaky.connects == 3)
        #expect(report.exitCode == 0)
    }

    @Test func aCrashReportFailsTheDeviceWithItsPath() async throws {
        let root = try temporaryDirectory()
        let crash = URL(fileURLWithPath: "/tmp/HADashboard-2026-11-21.ips")
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(
                drivers: [
                    "a": ScriptedDriver(crashes: [crash]), "b": ScriptedDriver(), "c": ScriptedDriver(),
                ],
                report: nil, locks: root)
        ).run()
        #expect(report.results[0].outcome == .failed)
        #expect(report.results[0].reason?.contains(crash.path) == true)
    }

    @Test func aLiveLockBlocksASecondRunAndAStaleOneIsRecovered() async throws {
        let root = try temporaryDirectory()
        // Held by another live process (Python holding an flock(2) on the file, then writing its pid
        // as hadeploy does — Python, not util-linux's flock(1), which a Mac lacks): the device is busy.
        let lockFile = root.appendingPathComponent("UDID-A.lock")
        let python = try #require(TestHost.runner.locate("python3"), "python3 is needed for this test")
        let other = Process()
        other.executableURL = URL(fileURLWithPath: python)
        other.arguments = [
            "-c",
            "import fcntl, os, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                + "f.write('%d\\n' % os.getpid()); f.flush()\ntime.sleep(30)\n",
            lockFile.path,
        ]
        try other.run()
        defer { if other.isRunning { kill(other.processIdentifier, SIGKILL) } }
        try waitUntilLocked(lockFile.path)
        let busy = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(
                drivers: ["a": ScriptedDriver(), "b": ScriptedDriver(), "c": ScriptedDriver()], report: nil,
                locks: root)
        ).run()
        #expect(busy.results[0].failedStep == "lock")
        #expect(busy.results[0].reason?.contains("pid \(other.processIdentifier)") == true)
        #expect(busy.results[1].outcome == .unverified)
        kill(other.processIdentifier, SIGKILL)
        other.waitUntilExit()
        // A lock left by a process that no longer exists is taken over.
        try "999999\n".write(
            to: root.appendingPathComponent("UDID-A.lock"), atomically: true, encoding: .utf8)
        let recovered = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(
                drivers: ["a": ScriptedDriver(), "b": ScriptedDriver(), "c": ScriptedDriver()], report: nil,
                locks: root)
        ).run()
        #expect(recovered.results[0].outcome == .unverified)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("UDID-A.lock").path))
    }

    /// Waits until another process holds an flock on `path` and has written its pid.
    func waitUntilLocked(_ path: String) throws {
        for _ in 0..<500 {
            let fd = open(path, O_RDONLY)
            if fd >= 0 {
                let free = flock(fd, LOCK_EX | LOCK_NB) == 0
                close(fd)
                let written = (FileManager.default.contents(atPath: path)?.count ?? 0) > 0
                if !free && written { return }
            }
            usleep(10_000)
        }
        throw CocoaError(.fileLocking)
    }

    @Test func failFastCancelsTheDevicesNotYetStarted() async throws {
        let root = try temporaryDirectory()
        let drivers = [
            "a": ScriptedDriver(installError: InstallRefused()), "b": ScriptedDriver(), "c": ScriptedDriver(),
        ]
        let report = await DeployExecutor(
            plan: try makePlan(),
            environment: environment(drivers: drivers, report: nil, locks: root, failFast: true, jobs: 1)
        ).run()
        #expect(report.results.map(\.outcome) == [.failed, .cancelled, .cancelled])
    }

    @Test func jsonLinesAreOneValidObjectPerLine() async throws {
        let root = try temporaryDirectory()
        let sink = RecordingOutputSink()
        var env = environment(
            drivers: [
                "a": ScriptedDriver(), "b": ScriptedDriver(installError: InstallRefused()),
                "c": ScriptedDriver(),
            ],
            report: nil, locks: root)
        env.reporter = JSONLinesReporter(output: sink, clock: TestHost.clock)
        _ = await DeployExecutor(plan: try makePlan(), environment: env).run()
        let lines = sink.standardOutput.split(separator: "\n")
        #expect(lines.count > 10)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["event"] is String)
        }
        #expect(!sink.standardOutput.contains("tok-SECRET-123"))
    }
}

extension JSONDecoder {
    static var iso: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// Records which steps ran, per device, in order.
final class StepLog: DeployReporter, @unchecked Sendable {
    private let lock = NSLock()
    private var started: [String: [String]] = [:]

    func handle(_ event: DeployEvent) {
        guard case .stepStarted(let device, let step) = event else { return }
        lock.withLock {
            // A retried step starts again; the plan lists it once.
            if started[device]?.last != step { started[device, default: []].append(step) }
        }
    }

    func steps(_ device: String) -> [String] { lock.withLock { started[device] ?? [] } }
}

/// What `hadeploy plan` prints is what runs: every backend's device runs exactly its plan's steps.
@Suite struct PlanIsTheProgramTests {
    @Test func everyBackendRunsExactlyThePlannedSteps() async throws {
        let yaml = """
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0"}
              simulator: {archs: [arm64], deployment_target: "16.4", sdk: iphonesimulator}
            devices:
              usb9: {transport: usb, ios: "9.3.5", arch: arm64, flavour: modern, udid: U9}
              usb15: {transport: usb, ios: "15.8", arch: arm64, flavour: modern, udid: U15, loaded_event: true}
              jailbroken: {transport: ssh, ios: "9.3.5", arch: arm64, flavour: modern, host: 10.0.0.2,
                           fallback_transport: usb, udid: U2}
              sim: {transport: simctl, kind: simulator, ios: "17.5", arch: arm64, flavour: simulator}
              modern17: {transport: devicectl, ios: "18.6", arch: arm64, flavour: modern, udid: U18}
            """
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(yaml: yaml, file: "devices.yaml")
        let version = GitVersion(
            marketingVersion: "1.2.3", buildNumber: 7, tag: "v1.2.3", commitsSinceTag: 0, dirty: false,
            shallow: false)
        for host in [HostPlatform.macOS, .linux] {
            let plan = try DeployPlanner(
                matrix: matrix, variables: ["HA_SERVER": "http://ha:8123", "HA_TOKEN": "t"],
                topology: Topology(host: host)
            ).plan(
                options: DeployOptions(targets: ["all"], verify: false, screenshots: true), version: version,
                deployID: "d-1")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "plan-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let log = StepLog()
            let artifact = Artifact(
                path: "/nonexistent.app", bundleID: "com.example.hadashboard", executable: "HADashboard",
                marketingVersion: "1.2.3", buildNumber: "7", flavour: "modern", archs: ["arm64"])
            let driver = ScriptedDriver()
            let environment = DeployEnvironment(
                driver: { _ in driver }, verifier: nil, verificationSkippedReason: "--no-verify",
                artifacts: ["modern": artifact, "simulator": artifact], reporter: log,
                reportDirectory: root.appendingPathComponent("report"), lockDirectory: root,
                fileSystem: TestHost.fileSystem, clock: TestHost.clock, secrets: ["HA_TOKEN": "t"])
            _ = await DeployExecutor(plan: plan, environment: environment).run()
            for device in plan.devices where device.availability == .available {
                #expect(
                    log.steps(device.id) == device.steps.map(\.id.rawValue),
                    "\(host) \(device.id) (\(device.backend))")
            }
            let ran = plan.devices.filter { !log.steps($0.id).isEmpty }.map(\.id)
            #expect(ran == plan.devices.filter { $0.availability == .available }.map(\.id))
        }
    }
}
