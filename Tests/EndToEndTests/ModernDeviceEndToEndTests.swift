import Foundation
import HADeployKit
import TestSupport
import Testing
import VirtualDevice

/// The iOS 17+ devices (the iPhone on iOS 18, the iPad mini 5 on iOS 26) deployed from Linux as a
/// user has it: `hadeploy iphone mini5 --virtual` drives their twins through pymobiledevice3 (the
/// pinned venv) — its own userspace tunnel, no root, no tunneld — and a real Home Assistant sees
/// both dashboards load.
@Suite(.serialized)
struct ModernDeviceEndToEndTests {
    static let twins = [
        DeployWorld.Twin(
            id: "iphone", productType: "iPhone17,2", ios: "18.6", arch: "arm64", flavour: "modern",
            transport: "devicectl"),
        DeployWorld.Twin(
            id: "mini5", productType: "iPad11,1", ios: "26.0", arch: "arm64", flavour: "modern",
            transport: "devicectl"),
    ]

    /// scripts/pmd3-venv.sh: the pinned pymobiledevice3 (idempotent).
    static func pymobiledevice3() throws -> String {
        let root = HADeployBinary.repositoryRoot
        let script = Process()
        script.executableURL = root.appendingPathComponent("scripts/pmd3-venv.sh")
        script.standardOutput = FileHandle.nullDevice
        try script.run()
        script.waitUntilExit()
        let path = root.appendingPathComponent(".venv-pmd3/bin/pymobiledevice3").path
        #expect(script.terminationStatus == 0, "scripts/pmd3-venv.sh failed")
        #expect(FileManager.default.isExecutableFile(atPath: path), "no \(path)")
        return path
    }

    @Test func theIPhoneAndTheMini5AreVerifiedThroughPymobiledevice3WithoutRootOrTunneld() async throws {
        let pymobiledevice3 = try Self.pymobiledevice3()
        let world = try await DeployWorld(twins: Self.twins)
        defer { Task { await world.shutdown() } }
        let arguments = [
            "iphone", "mini5", "--kiosk", "--virtual", "--no-build", "--report", "report-virtual",
        ]
        // No tunneld runs here and the test is not root: pymobiledevice3's userspace tunnel must do.
        let environment = ["USBMUXD_SOCKET_ADDRESS": "", "PYMOBILEDEVICE3": pymobiledevice3]
        let plan = try await world.deploy(["plan"] + arguments + ["--json"], environment: environment)
        #expect(plan.status == 0, "\(plan.stderr)")
        for id in ["iphone", "mini5"] {
            let backend = try WiFiDeployEndToEndTests.backend(plan.stdout, id)
            #expect(backend["kind"] as? String == "pymobiledevice3", "\(id): \(backend)")
        }

        let sampler = ProcessListSampler(secrets: [world.ha.token])
        let run = try await world.deploy(arguments, environment: environment, timeout: .seconds(420))
        let (leaks, samples) = sampler.stop()
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(samples > 50)
        #expect(leaks.isEmpty, "\(leaks.count) command lines held the token: \(leaks.prefix(2))")

        let report = try world.report("report-virtual")
        #expect(Set(report.results.map(\.id)) == ["iphone", "mini5"])
        for device in report.results {
            #expect(device.outcome == .succeeded, "\(device.id): \(device.reason ?? "")")
            guard case .loaded = device.verification else {
                Issue.record("\(device.id) not loaded: \(device.verification) (\(device.reason ?? ""))")
                continue
            }
            #expect(device.steps.map(\.name).contains("mount"), "\(device.id): \(device.steps.map(\.name))")
            let png = try Data(
                contentsOf: world.root.appendingPathComponent("report-virtual/screenshots/\(device.id).png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(device.id)'s screenshot is a PNG")
        }
    }

    /// `hadeploy devices`: per iOS 17+ device, one line of what pymobiledevice3 needs, there or missing.
    @Test func devicesSaysWhatPymobiledevice3HasAndLacksInOneLine() async throws {
        let pymobiledevice3 = try Self.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.twins[0]])
        defer { Task { await world.shutdown() } }
        let listed = try await world.deploy(["devices"], environment: ["PYMOBILEDEVICE3": pymobiledevice3])
        #expect(listed.status == 0, "\(listed.stderr)")
        let line = try #require(listed.stdout.split(separator: "\n").first { $0.hasPrefix("iphone ") })
        #expect(line.contains("pymobiledevice3"), "\(line)")
        #expect(line.contains("Python 3."), "\(line)")
        #expect(line.contains("pymobiledevice3 11.45.0"), "\(line)")
        #expect(line.contains("Developer Mode on"), "\(line)")
        #expect(line.contains("image mounted") && !line.contains("missing"), "\(line)")

        let without = try await world.deploy(
            ["devices"], environment: ["PYMOBILEDEVICE3": "/nonexistent/pymobiledevice3"])
        let bare = try #require(without.stdout.split(separator: "\n").first { $0.hasPrefix("iphone ") })
        #expect(bare.contains("missing: pymobiledevice3"), "\(bare)")
    }

    /// A device whose image is not mounted and a host without internet (Apple's signing server out
    /// of reach, as in this test): the mount step tries auto-mount and the device ends there with the
    /// reason and the fix, not at launch with a riddle.
    @Test func anUnmountedImageWithoutInternetEndsAtTheMountStepWithTheFix() async throws {
        let pymobiledevice3 = try Self.pymobiledevice3()
        var twin = Self.twins[0]
        twin.timeouts = "{mount: 60}"
        let world = try await DeployWorld(twins: [twin])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        let unmount = Process()
        unmount.executableURL = URL(fileURLWithPath: pymobiledevice3)
        unmount.arguments = ["mounter", "umount-personalized", "--udid", udid]
        unmount.environment = ProcessInfo.processInfo.environment.merging([
            "USBMUXD_SOCKET_ADDRESS": world.socket.replacingOccurrences(of: "UNIX:", with: "")
        ]) { $1 }
        unmount.standardOutput = FileHandle.nullDevice
        unmount.standardError = FileHandle.nullDevice
        try unmount.run()
        unmount.waitUntilExit()
        #expect(unmount.terminationStatus == 0)

        let run = try await world.deploy(
            DeployEndToEndTests.arguments,
            environment: ["PYMOBILEDEVICE3": pymobiledevice3], timeout: .seconds(300))
        #expect(run.status != 0)
        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .failed)
        #expect(iphone.failedStep == "mount", "\(iphone.reason ?? "")")
        #expect(iphone.reason?.contains("auto-mount failed") == true, "\(iphone.reason ?? "")")
        #expect(
            (run.stdout + run.stderr).contains("connect this host to the internet once per device boot"),
            "\(run.stdout)\n\(run.stderr)")
    }

    /// Developer Mode off after an update (iOS 16+): the twin answers as a real device — amfi's
    /// DeveloperModeStatus false to ideviceinfo and pymobiledevice3 alike — and hadeploy ends the
    /// device at connect with where to turn it on, before a byte of the app is sent. On again, it deploys.
    @Test func developerModeOffEndsTheDeviceAtConnectWithTheFix() async throws {
        let pymobiledevice3 = try Self.pymobiledevice3()
        let world = try await DeployWorld(twins: [Self.twins[0]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["iphone"])
        try await world.usbmuxd.inject(.developerModeOff, udid: udid)

        // libusbmuxd takes `UNIX:<path>`, pymobiledevice3 the path.
        func peer(_ executable: String, _ arguments: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let address =
                executable.hasPrefix("/usr/bin/")
                ? world.socket : world.socket.replacingOccurrences(of: "UNIX:", with: "")
            process.environment = ProcessInfo.processInfo.environment.merging([
                "USBMUXD_SOCKET_ADDRESS": address
            ]) {
                $1
            }
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(
            try peer(
                "/usr/bin/ideviceinfo",
                ["-u", udid, "-q", "com.apple.security.mac.amfi", "-k", "DeveloperModeStatus"])
                == "false")
        #expect(
            try peer(pymobiledevice3, ["amfi", "developer-mode-status", "--udid", udid]).lowercased()
                == "false")

        let off = try await world.deploy(
            DeployEndToEndTests.arguments, environment: ["PYMOBILEDEVICE3": pymobiledevice3],
            timeout: .seconds(300))
        #expect(off.status == 1, "\(off.stdout)\(off.stderr)")
        let iphone = try #require(try world.report().results.first)
        #expect(iphone.outcome == .failed && iphone.failedStep == "connect", "\(iphone)")
        let reason = iphone.reason ?? ""
        #expect(reason.contains("Developer Mode is off") && reason.contains("nothing was sent"), "\(reason)")
        #expect(reason.contains("Settings > Privacy & Security > Developer Mode"), "\(reason)")
        #expect(try await world.usbmuxd.installedApps(udid: udid).isEmpty)

        try await world.usbmuxd.clearFaults(udid: udid, kind: "developerModeOff")
        #expect(
            try peer(pymobiledevice3, ["amfi", "developer-mode-status", "--udid", udid]).lowercased()
                == "true")
        let on = try await world.deploy(
            DeployEndToEndTests.arguments, environment: ["PYMOBILEDEVICE3": pymobiledevice3],
            timeout: .seconds(300))
        #expect(on.status == 0, "\(on.stdout)\(on.stderr)")
    }
}
