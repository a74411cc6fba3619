import DeployModel
import Foundation
import TestSupport
import Testing
import VirtualDevice

/// pymobiledevice3's helper on the iOS 18 twin, through the real pymobiledevice3 (the pinned venv):
/// one Python process per device per run, one developer tunnel for every step that needs one, and a
/// tunnel that drops mid-run rebuilt once, the step saying why.
@Suite(.serialized)
struct PyMobileDevice3HelperEndToEndTests {
    static let iphone = ModernDeviceEndToEndTests.twins[0]
    static let arguments = [
        "iphone", "--kiosk", "--no-build", "--artifacts", "artifacts", "--report", "report",
    ]

    /// Before the helper, the launch and the screenshot each started pymobiledevice3 and built a tunnel
    /// of their own (two per deploy, plus a Python start for the version and one for the mount lookup).
    @Test func oneHelperServesTheMountLookupLaunchAndScreenshotThroughOneTunnel() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.iphone])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        let sampler = ProcessListSampler(secrets: [world.ha.token])
        let run = try await world.deploy(
            Self.arguments, environment: ["PYMOBILEDEVICE3": pymobiledevice3], timeout: .seconds(300))
        let (leaks, _) = sampler.stop()
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(leaks.isEmpty, "\(leaks.count) command lines held the token: \(leaks.prefix(2))")

        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .succeeded, "\(iphone.reason ?? "")")
        let steps = Dictionary(iphone.steps.map { ($0.name, $0) }) { first, _ in first }
        for name in ["mount", "launch", "screenshot"] {
            #expect(steps[name]?.status == "ok", "\(name): \(String(describing: steps[name]))")
            // Neither a fallback to one process per step nor a rebuilt tunnel was needed.
            #expect(steps[name]?.detail == nil, "\(name): \(steps[name]?.detail ?? "")")
        }
        let png = try Data(contentsOf: world.root.appendingPathComponent("report/screenshots/iphone.png"))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(try await world.usbmuxd.runningApp(udid: udid)?.bundleIdentifier == "com.example.hadashboard")
        // The device saw one developer tunnel for the launch and the screenshot together.
        #expect(try await world.usbmuxd.developerTunnels(udid: udid) == 1)
        // The helper ended with the run, and closed its tunnel.
        var open = try await world.usbmuxd.openDeveloperTunnels(udid: udid)
        for _ in 0..<100 where open > 0 {
            try await Task.sleep(for: .milliseconds(50))
            open = try await world.usbmuxd.openDeveloperTunnels(udid: udid)
        }
        #expect(open == 0)
    }

    /// The device's tunnel is cut after the launch (a cable moved to another port): the next step
    /// that needs it rebuilds it once, succeeds, and says why in its message.
    @Test func aTunnelThatDropsMidRunIsRebuiltOnceAndTheStepSaysWhy() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.iphone])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        let deploy = Task {
            try await world.deploy(
                Self.arguments, environment: ["PYMOBILEDEVICE3": pymobiledevice3], timeout: .seconds(300))
        }
        // Launched: the app runs on the twin, through the one tunnel so far.
        var launched = false
        for _ in 0..<2400 where !launched {
            launched = try await world.usbmuxd.runningApp(udid: udid) != nil
            if !launched { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(launched, "the app was not launched within 120 s")
        // The launch's reply is on its way back through the tunnel: cut it once that has arrived.
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await world.usbmuxd.dropDeveloperTunnels(udid: udid) == 1)
        let run = try await deploy.value
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")

        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .succeeded, "\(iphone.reason ?? "")")
        let screenshot = try #require(iphone.steps.first { $0.name == "screenshot" })
        #expect(screenshot.status == "ok")
        let detail = screenshot.detail ?? ""
        #expect(
            detail.contains("the developer tunnel dropped") || detail.contains("the tunnel had closed"),
            "\(detail)")
        #expect(detail.contains("was rebuilt"), "\(detail)")
        #expect(
            try Data(contentsOf: world.root.appendingPathComponent("report/screenshots/iphone.png")).count > 8
        )
        // Rebuilt once: the launch's tunnel and the screenshot's.
        #expect(try await world.usbmuxd.developerTunnels(udid: udid) == 2)
    }
}
