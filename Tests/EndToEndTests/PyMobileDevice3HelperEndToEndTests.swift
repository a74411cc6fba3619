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
            #expect(steps[name]?.status == .ok, "\(name): \(String(describing: steps[name]))")
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
    /// that needs it rebuilds it once, succeeds, and says why in its message; the app is launched once.
    @Test func aTunnelThatDropsMidRunIsRebuiltOnceAndTheStepSaysWhy() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.iphone])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        // The twin cuts the tunnel once the launch's answer has been read: the screenshot, the next
        // step that needs it, finds it gone (whatever the machine's load, no race with the test).
        try await world.usbmuxd.inject(.dropDeveloperTunnelAfterLaunch, udid: udid)
        let run = try await world.deploy(
            Self.arguments, environment: ["PYMOBILEDEVICE3": pymobiledevice3], timeout: .seconds(300))
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(
            !(try await world.usbmuxd.faults(udid: udid)).contains(.dropDeveloperTunnelAfterLaunch),
            "the launch happened and the tunnel was cut")

        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .succeeded, "\(iphone.reason ?? "")")
        let launch = try #require(iphone.steps.first { $0.name == "launch" })
        #expect(launch.status == .ok && launch.detail == nil, "\(launch.detail ?? "")")
        #expect(try await world.usbmuxd.appLaunches(udid: udid) == 1, "the app was launched once")
        let screenshot = try #require(iphone.steps.first { $0.name == "screenshot" })
        #expect(screenshot.status == .ok)
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

    /// A pymobiledevice3 the helper cannot use (here its console script finds the package itself,
    /// which the helper's interpreter cannot import): the deploy goes on with one pymobiledevice3
    /// process per step, as before the helper, and the first step that needed it says so, once.
    @Test func aPymobiledevice3TheHelperCannotUseFallsBackToOneProcessPerStepAndSaysSoOnce() async throws {
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.iphone])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        let venv = URL(fileURLWithPath: pymobiledevice3).deletingLastPathComponent()
            .deletingLastPathComponent()
        let sitePackages = try #require(
            try FileManager.default.contentsOfDirectory(
                at: venv.appendingPathComponent("lib"), includingPropertiesForKeys: nil
            ).first { $0.lastPathComponent.hasPrefix("python3") }
        ).appendingPathComponent("site-packages")
        let script = world.root.appendingPathComponent("elsewhere/pymobiledevice3")
        try FileManager.default.createDirectory(
            at: script.deletingLastPathComponent(), withIntermediateDirectories: true)
        try """
        #!/usr/bin/env python3
        import sys
        sys.path.insert(0, \(String(reflecting: sitePackages.path)))
        from pymobiledevice3.__main__ import main
        if __name__ == "__main__":
            sys.exit(main())

        """.write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)

        let run = try await world.deploy(
            Self.arguments, environment: ["PYMOBILEDEVICE3": script.path], timeout: .seconds(300))
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .succeeded, "\(iphone.reason ?? "")")
        let said = iphone.steps.compactMap { step in step.detail.map { (step.name, $0) } }.filter {
            $0.1.contains("helper could not start")
        }
        #expect(said.count == 1, "\(iphone.steps)")
        #expect(said.first?.0 == "mount", "\(said)")
        #expect(said.first?.1.contains("No module named 'pymobiledevice3'") == true, "\(said)")
        #expect(said.first?.1.contains("one pymobiledevice3 process per step") == true, "\(said)")
        #expect(iphone.steps.first { $0.name == "screenshot" }?.status == .ok)
        // Without the helper, the launch and the screenshot each built a tunnel of their own.
        #expect(try await world.usbmuxd.developerTunnels(udid: udid) == 2)
    }
}
