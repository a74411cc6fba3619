import Foundation
import Testing
import VirtualDevice

extension FidelitySuite {
    /// pymobiledevice3 11.45 on the iOS 17.4+ developer path, as a user runs it today: no root, no
    /// tunneld. Each command builds its own userspace tunnel (CoreDeviceProxy over lockdown, TCP in
    /// the client's own stack), finds the services through RSD and drives DVT; the twin's app then
    /// runs as it does after a USB launch. Two suites (USB, Wi-Fi) that run side by side.
    @Suite("pymobiledevice3's iOS 17.4+ developer tunnel over USB", .serialized)
    struct DeveloperTunnelTests {
        @Test("rsd-info, dvt launch/proclist/screenshot/kill on the iOS 18 twin (iPhone 16 Pro Max, USB)")
        func iPhoneOverUSB() async throws {
            try await Self.run(VirtualDeviceProfile.preset(productType: "iPhone17,2", iOSVersion: "18.6.2")!)
        }

        @Test("rsd-info, dvt launch/proclist/screenshot/kill on the iOS 26 twin (iPad mini 5, USB)")
        func miniOverUSB() async throws {
            try await Self.run(VirtualDeviceProfile.preset(productType: "iPad11,1", iOSVersion: "26.0")!)
        }
    }

    @Suite("pymobiledevice3's iOS 17.4+ developer tunnel over Wi-Fi", .serialized)
    struct DeveloperTunnelWiFiTests {
        @Test("the same over Wi-Fi on the iOS 18 twin (lockdown through usbmuxd's Network entry)")
        func iPhoneOverWiFi() async throws {
            var profile = VirtualDeviceProfile.preset(productType: "iPhone17,2", iOSVersion: "18.6.2")!
            profile.connection = .network
            try await DeveloperTunnelTests.run(profile)
        }

        @Test("the same over Wi-Fi on the iOS 26 twin")
        func miniOverWiFi() async throws {
            var profile = VirtualDeviceProfile.preset(productType: "iPad11,1", iOSVersion: "26.0")!
            profile.connection = .network
            try await DeveloperTunnelTests.run(profile)
        }
    }
}

extension FidelitySuite.DeveloperTunnelTests {
    static func run(_ profile: VirtualDeviceProfile) async throws {
        let twin = try await FidelityTwin.start(profile, behaviour: HADashboardAppBehaviour())
        do {
            try await exercise(twin, profile)
        } catch {
            await twin.stop()
            throw error
        }
        await twin.stop()
    }

    static func exercise(_ twin: FidelityTwin, _ profile: VirtualDeviceProfile) async throws {
        let label = "iOS \(profile.productVersion) \(profile.connection == .usb ? "USB" : "Wi-Fi") tunnel"
        let score = FidelityScore(label)
        var timings: [String] = []
        defer {
            print(score.summary)
            print("TIMING \(label): " + timings.joined(separator: ", "))
        }
        let udid = twin.udid
        let bundleID = "io.hadeploy.tunnel"

        func check(_ name: String, _ result: ClientProcess.Result, _ passed: Bool) {
            timings.append("\(name) \(String(format: "%.1f", result.seconds)) s")
            #expect(score.record("pymobiledevice3", name, passed), "\(result)")
        }
        func ran(_ result: ClientProcess.Result) -> Bool {
            result.succeeded && !result.output.contains("Traceback") && !result.output.contains(" ERROR ")
        }

        // The app goes on over plain lockdown, as on iOS 16.
        let ipa = try twin.makeIPA(bundleID: bundleID, name: "HADashboard")
        let install = try await twin.pmd3(["apps", "install", ipa.path], deadline: 120)
        check("apps install", install, ran(install))

        // Developer Mode on, the personalized image mounted (the twin stands for a device whose
        // image was mounted at boot: a real mount needs Apple's signing server).
        let developerMode = try await twin.pmd3(["amfi", "developer-mode-status"])
        check(
            "amfi developer-mode-status", developerMode,
            ran(developerMode)
                && developerMode.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "true")
        let lookup = try await twin.pmd3(["mounter", "lookup", "Personalized"])
        check(
            "mounter lookup Personalized", lookup,
            ran(lookup) && !lookup.output.contains("is not mounted") && !lookup.stdout.isEmpty)
        let images = try await twin.pmd3(["mounter", "list"])
        check(
            "mounter list", images,
            ran(images) && images.stdout.contains("\"DiskImageType\": \"Personalized\"")
                && images.stdout.contains("\"MountPath\": \"/System/Developer\""))

        // RSD through the userspace tunnel (rsd-info has no --udid: the tunnel's target comes
        // from PYMOBILEDEVICE3_UDID).
        let info = try await twin.pmd3(["remote", "rsd-info"], udidOption: false)
        check(
            "remote rsd-info", info,
            ran(info) && info.stdout.contains("\"UniqueDeviceID\": \"\(udid)\"")
                && info.stdout.contains("\"OSVersion\": \"\(profile.productVersion)\"")
                && info.stdout.contains("\"com.apple.instruments.dtservicehub\"")
                && info.stdout.contains("\"com.apple.mobile.lockdown.remote.trusted\""))

        // A lockdown service behind RSD (AFC's shim), both ways, more than the windows hold.
        let bulk = twin.directory.appendingPathComponent("tunnel-bulk.bin")
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<4_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try bytes.write(to: bulk)
        let push = try await twin.pmd3([
            "afc", "push", bulk.path, "/Downloads/tunnel-bulk.bin", "--userspace",
        ])
        check("afc push (tunnel, 4 MB)", push, ran(push))
        let back = twin.directory.appendingPathComponent("tunnel-bulk-back.bin")
        let pull = try await twin.pmd3([
            "afc", "pull", "/Downloads/tunnel-bulk.bin", back.path, "--userspace",
        ])
        check("afc pull (tunnel, 4 MB)", pull, ran(pull) && (try? Data(contentsOf: back)) == bytes)

        // Launch with arguments and environment: the app runs and logs as after a USB launch.
        let launch = try await twin.pmd3([
            "developer", "dvt", "launch", "\(bundleID) -HADashboard lobby -HADemoMode YES",
            "--env", "HA_TUNNEL_PROBE=1", "--kill-existing",
        ])
        let pid = launch.stdout.components(separatedBy: "Process launched with pid ").last
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let running = try await twin.daemon.runningApp(udid: udid)
        check(
            "developer dvt launch", launch,
            ran(launch) && pid != nil && running?.bundleIdentifier == bundleID
                && Array(running?.arguments.dropFirst() ?? []) == [
                    "-HADashboard", "lobby", "-HADemoMode", "YES",
                ]
                && running?.environment.contains("HA_TUNNEL_PROBE=1") == true)
        let log = try await twin.daemon.appDataContainer(udid: udid, bundleIdentifier: bundleID)
            .appendingPathComponent("Documents/ha-log.txt")
        var logText = ""
        for _ in 0..<50 where !logText.contains("Loading demo data") {
            try await Task.sleep(for: .milliseconds(100))
            logText = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        }
        #expect(
            logText.contains("didFinishLaunching START") && logText.contains("Loading demo data"),
            "\(logText)")

        let processes = try await twin.pmd3(["developer", "dvt", "proclist"])
        check(
            "developer dvt proclist", processes,
            ran(processes) && pid.map { processes.stdout.contains("\"pid\": \($0),") } == true
                && processes.stdout.contains("\"bundleIdentifier\": \"\(bundleID)\"")
                && processes.stdout.contains("\"name\": \"SpringBoard\""))

        // The screenshot is what the app shows: the same image the twin renders for its screen.
        let file = twin.directory.appendingPathComponent("tunnel-screen.png")
        let shot = try await twin.pmd3(["developer", "dvt", "screenshot", file.path])
        let png = (try? Data(contentsOf: file)) ?? Data()
        let expected = try await twin.daemon.screenshot(udid: udid)
        check(
            "developer dvt screenshot", shot,
            ran(shot) && png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
                && Self.pngSize(png).map { $0 == (profile.screenWidth, profile.screenHeight) } == true
                && png == expected)
        let screen = try await twin.daemon.screen(udid: udid)
        #expect(screen.title != profile.deviceName, "the screenshot shows the home screen: \(screen)")

        let kill = try await twin.pmd3(["developer", "dvt", "kill", String(pid ?? 0)])
        let afterKill = try await twin.daemon.runningApp(udid: udid)
        check("developer dvt kill", kill, ran(kill) && afterKill == nil)
        let processesAfter = try await twin.pmd3(["developer", "dvt", "proclist"])
        check(
            "developer dvt proclist after kill", processesAfter,
            ran(processesAfter)
                && !processesAfter.stdout.contains("\"bundleIdentifier\": \"\(bundleID)\""))

        // Without the image, RSD lists no developer service and pymobiledevice3 says to mount it.
        let unmount = try await twin.pmd3(["mounter", "umount-personalized"])
        check("mounter umount-personalized", unmount, ran(unmount))
        let withoutImage = try await twin.pmd3(["developer", "dvt", "proclist"])
        check(
            "developer dvt proclist without the image (refused)", withoutImage,
            withoutImage.status != 0 && withoutImage.output.contains("mounter auto-mount")
                && !withoutImage.output.contains("Traceback"))
    }

    /// Width and height from a PNG's IHDR chunk.
    static func pngSize(_ data: Data) -> (Int, Int)? {
        guard data.count >= 24 else { return nil }
        let bytes = [UInt8](data.prefix(24))
        func number(_ offset: Int) -> Int { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (number(16), number(20))
    }
}
