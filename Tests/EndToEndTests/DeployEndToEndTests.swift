import DeployModel
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HADeployKit
import ImageCodec
import MobileDevice
import TestSupport
import Testing
import VirtualDevice

/// `hadeploy all` on virtual devices (the real usbmuxd/lockdown/service protocols) with a real Home
/// Assistant: the app on each device really connects to it and fires `ha_dashboard_loaded`.
@Suite(.serialized)
struct DeployEndToEndTests {
    static let arguments = ["all", "--kiosk", "--no-build", "--artifacts", "artifacts", "--report", "report"]

    func assertNoSecrets(_ world: DeployWorld, _ result: HADeployBinary.Result) throws {
        #expect(!result.stdout.contains(world.ha.token))
        #expect(!result.stderr.contains(world.ha.token))
        for file in ["summary.json", "junit.xml", "index.html"] {
            let text = try String(
                contentsOf: world.root.appendingPathComponent("report/\(file)"), encoding: .utf8)
            #expect(!text.contains(world.ha.token), "\(file) must not contain the token")
        }
    }

    @Test func everyDeviceLoadsItsDashboardAndTheReportProvesIt() async throws {
        let world = try await DeployWorld()
        defer { Task { await world.shutdown() } }
        let result = try await world.deploy(Self.arguments)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try world.report()
        #expect(report.results.map(\.id) == ["ipad2", "mini4", "kitchen"])
        for device in report.results {
            #expect(device.outcome == .succeeded, "\(device.id): \(device.reason ?? "")")
            guard case .loaded(let seconds) = device.verification else {
                Issue.record("\(device.id) not loaded: \(device.verification)")
                continue
            }
            #expect(seconds >= 0 && seconds < 20)
            let png = try Data(
                contentsOf: world.root.appendingPathComponent("report/screenshots/\(device.id).png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        }
        // The virtual apps really got the launch arguments.
        let running = try #require(try await world.usbmuxd.runningApp(udid: world.udids["mini4"]!))
        #expect(running.arguments.contains("-HAKioskMode"))
        #expect(running.arguments[running.arguments.firstIndex(of: "-HAKioskMode")! + 1] == "YES")
        let junit = try String(
            contentsOf: world.root.appendingPathComponent("report/junit.xml"), encoding: .utf8)
        #expect(junit.contains("tests=\"3\" failures=\"0\""))
        try assertNoSecrets(world, result)

        try await assertReportRendersInChromium(world.root.appendingPathComponent("report/index.html"))

        // Unchanged redeploy: nothing uploaded, still verified.
        let again = try await world.deploy(Self.arguments)
        #expect(again.status == 0)
        #expect(try world.report().results.allSatisfy { $0.install == .unchanged })
    }

    /// The contact sheet opens offline in a real headless browser and shows something (not a blank page).
    func assertReportRendersInChromium(_ page: URL) async throws {
        let shot = page.deletingLastPathComponent().appendingPathComponent("chromium.png")
        let output = try await TestHost.runner.run(
            ProcessCommand(
                "chromium",
                [
                    "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1200,900",
                    "--screenshot=\(shot.path)", page.absoluteString,
                ], environment: ["HOME": page.deletingLastPathComponent().path]),
            timeout: .seconds(90))
        #expect(output.status == 0, "chromium: \(output.stderr.suffix(500))")
        let image = try ImageCodec.decode(try Data(contentsOf: shot))
        #expect(image.width == 1200)
        var colours = Set<[UInt8]>()
        var dark = 0
        for index in stride(from: 0, to: image.pixels.count - 2, by: 3) {
            let pixel = Array(image.pixels[index..<index + 3])
            if colours.count < 64 { colours.insert(pixel) }
            if pixel.allSatisfy({ $0 < 128 }) { dark += 1 }
        }
        #expect(colours.count >= 16, "the rendered report looks blank")
        #expect(dark > image.width * image.height / 500, "almost no text or pictures were drawn")
    }

    @Test func eachFaultGivesThatDeviceTheRightReasonWhileTheOthersSucceed() async throws {
        let world = try await DeployWorld()
        defer { Task { await world.shutdown() } }
        try await world.usbmuxd.inject(.crashOnLaunch, udid: world.udids["kitchen"]!)
        try await world.usbmuxd.inject(
            .failInstall(error: "ApplicationVerificationFailed", description: "bad signature"),
            udid: world.udids["mini4"]!)
        let result = try await world.deploy(Self.arguments)
        #expect(result.status == 1)
        let report = try world.report()
        let byID = Dictionary(uniqueKeysWithValues: report.results.map { ($0.id, $0) })
        #expect(byID["ipad2"]?.outcome == .succeeded)
        #expect(byID["mini4"]?.outcome == .failed)
        #expect(byID["mini4"]?.failedStep == "install")
        #expect(byID["mini4"]?.reason?.contains("ApplicationVerificationFailed") == true)
        #expect(byID["kitchen"]?.outcome == .failed)
        #expect(byID["kitchen"]?.reason?.contains("crash") == true)
        #expect(byID["kitchen"]?.crashReports.isEmpty == false)
        let junit = try String(
            contentsOf: world.root.appendingPathComponent("report/junit.xml"), encoding: .utf8)
        #expect(junit.contains("failures=\"2\""))
        try assertNoSecrets(world, result)
    }

    /// Without --report, crash reports went to `/tmp/hadeploy-<deploy id>`: a path another user could
    /// prepare (a link into their folder, written as root), never removed. Now: the project's own
    /// state folder, owner-only, and only runs that found a crash leave a folder.
    @Test func withoutAReportCrashReportsStayInTheProjectsPrivateStateFolder() async throws {
        let world = try await DeployWorld()
        defer { Task { await world.shutdown() } }
        try await world.usbmuxd.inject(.crashOnLaunch, udid: world.udids["kitchen"]!)
        let temporary = FileManager.default.temporaryDirectory.path
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [])
        let result = try await world.deploy(["kitchen", "mini4", "--no-build", "--artifacts", "artifacts"])
        #expect(result.status == 1, "\(result.stderr)")
        let after = Set((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [])
        // The suites running alongside make their own folders: their worlds (hadeploy-e2e-*,
        // hadeploy-fakefs-*, ReportMergeEndToEndTests' hadeploy-merge-*), their peers (Mosquitto's
        // hadeploy-mosquitto-*, Home Assistant's hadeploy-ha-*, the hostile one's), their git
        // repositories, and their `hadeploy pair` and `devices` runs their usbmuxd relay's private
        // folder (mkdtemp, 0700: hadeploy-usbmuxd.XXXXXX).
        let others = [
            "hadeploy-fakefs", "hadeploy-e2e-", "hadeploy-merge-", "hadeploy-usbmuxd.", "hadeploy-mosquitto-",
            "hadeploy-ha-", "hadeploy-hostile-ha-", "hadeploy-git-", "hadeploy-secret-",
            "hadeploy-under-test-",
            "hadeploy-twin-missing-",
        ]
        let made = after.subtracting(before).filter { name in
            name.hasPrefix("hadeploy-") && !others.contains { name.hasPrefix($0) }
        }
        #expect(made.isEmpty, "new shared temporary folders: \(made)")
        // The project's state folder: `.hadeploy`, or `.hadeploy/virtual` as here (devices.yaml's state).
        let state = world.root.appendingPathComponent(".hadeploy")
        let crashes =
            [state, state.appendingPathComponent("virtual")].map { $0.appendingPathComponent("crashes") }
            .first { FileManager.default.fileExists(atPath: $0.path) }
            ?? state.appendingPathComponent("crashes")
        #expect(result.stderr.contains("(crash report: \(crashes.path)/"), "\(result.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: crashes.path)[.posixPermissions] as? Int
        #expect(mode == 0o700, "\(String(mode ?? 0, radix: 8))")
        let runs = try FileManager.default.contentsOfDirectory(atPath: crashes.path)
        #expect(runs.count == 1, "only the run that found a crash keeps a folder: \(runs)")
        let kept = try FileManager.default.contentsOfDirectory(
            atPath: crashes.appendingPathComponent(runs.first ?? "").appendingPathComponent("kitchen").path)
        #expect(!kept.isEmpty)

        // A run that finds no crash leaves nothing behind.
        let clean = try await world.deploy(["mini4", "--no-build", "--artifacts", "artifacts"])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: crashes.path).count == 1)
    }

    @Test func aDropMidUploadIsRetriedAndAStallHitsItsDeadline() async throws {
        var twins = DeployWorld.defaultTwins
        twins[2].timeouts = "{connect: 5, install: 8}"
        let world = try await DeployWorld(twins: twins)
        defer { Task { await world.shutdown() } }
        // Every upload to mini4 is cut after 1000 bytes (a bad cable).
        try await world.usbmuxd.inject(.dropUploadAfter(bytes: 1000), udid: world.udids["mini4"]!)
        try await world.usbmuxd.inject(.stall(at: .lockdown), udid: world.udids["kitchen"]!)
        let result = try await world.deploy(Self.arguments)
        let report = try world.report()
        let byID = Dictionary(uniqueKeysWithValues: report.results.map { ($0.id, $0) })
        #expect(result.status == 1)
        #expect(byID["ipad2"]?.outcome == .succeeded)
        #expect(byID["kitchen"]?.outcome == .failed)
        #expect(byID["kitchen"]?.reason?.contains("connect") == true)
        // mini4: the install is tried as often as its plan says (retries: 1, after re-probing), not
        // again underneath by the USB library; it fails with the drop named, never half-installed.
        let apps = try await world.usbmuxd.installedApps(udid: world.udids["mini4"]!)
        let mini4 = try #require(byID["mini4"])
        #expect(mini4.outcome == .failed)
        #expect(mini4.steps.filter { $0.name == "install" }.count == 2, "\(mini4.steps.map(\.name))")
        #expect(mini4.reason?.contains("connection broke") == true, "\(mini4.reason ?? "")")
        #expect(mini4.reason?.contains("retried once after reconnecting") == false, "\(mini4.reason ?? "")")
        #expect(!apps.contains { $0.bundleIdentifier == "com.example.hadashboard" })
    }

    /// A lockdownd that answers with a broken frame used to end at the connect deadline ("did not
    /// finish within 30 s"); the report now says what the device sent.
    @Test func aGarbledLockdownReplyIsReportedWithWhatTheDeviceSent() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        try await world.usbmuxd.inject(.garble(at: .lockdown), udid: world.udids["mini4"]!)
        let result = try await world.deploy(Self.arguments)
        #expect(result.status == 1)
        let device = try #require(try world.report().results.first)
        #expect(device.outcome == .failed)
        let reason = device.reason ?? ""
        #expect(reason.contains("lockdownd's reply on port 62078 is wrong"), "\(reason)")
        #expect(reason.contains("announced 1024 bytes but 43 came"), "\(reason)")
        #expect(!reason.contains("did not finish within"), "\(reason)")
        #expect(result.stderr.contains("Restart the device"), "\(result.stderr)")
    }

    @Test func aRebootUnmountsTheImageAndTheNextDeployMountsItAgain() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        #expect(try await world.deploy(Self.arguments).status == 0)
        let udid = world.udids["mini4"]!
        try await world.usbmuxd.reboot(udid: udid)
        #expect(try await world.attached("mini4"), "the twin came back after its reboot")
        #expect(await world.usbmuxd.devices().first?.developerImageMounted == false)
        let again = try await world.deploy(Self.arguments)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(await world.usbmuxd.devices().first?.developerImageMounted == true)
    }

    /// The image is the plan's mount step's: a launch that finds it unmounted (the device restarted)
    /// mounts nothing and names the step that does; that step (`prepare()`) then mounts it.
    @Test func aLaunchNeverMountsTheImageTheMountStepDoes() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        #expect(try await world.deploy(Self.arguments).status == 0)
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.reboot(udid: udid)
        try await Task.sleep(for: .seconds(1))
        try world.routeThisProcess()
        let usb = USBDriver(
            udid: udid, name: "mini4",
            options: USBDeviceOptions(
                fileSystem: TestHost.fileSystem, clock: TestHost.clock,
                stateDirectory: world.root.appendingPathComponent("usb-state"),
                developerImageDirectories: [world.root.appendingPathComponent("DeviceSupport")]))
        _ = try await usb.connect()
        let artifact = try ArtifactInspector(fileSystem: TestHost.fileSystem).inspect(
            world.root.appendingPathComponent("artifacts/modern/HADashboard.app"), flavour: "modern")
        let launch = try ResolvedLaunch(
            LaunchSettings(
                credentials: .keep, dashboard: .unchanged, kiosk: nil, autoRegister: false, appSettings: [:],
                deployID: nil, deviceID: nil), environment: [:])
        let refused = await #expect(throws: MobileDeviceError.self) {
            try await usb.launch(artifact, settings: launch)
        }
        let text = refused.map { "\($0)" } ?? ""
        #expect(text.contains("Developer Disk Image is not mounted"), "\(text)")
        #expect(text.contains("its mount step mounts the image"), "\(text)")
        #expect(await world.usbmuxd.devices().first?.developerImageMounted == false)
        try await usb.prepare()
        #expect(await world.usbmuxd.devices().first?.developerImageMounted == true)
        try await usb.launch(artifact, settings: launch)
    }

    @Test func withoutVerificationTheResultSaysSkippedNeverPassed() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[0]])
        defer { Task { await world.shutdown() } }
        let result = try await world.deploy(Self.arguments + ["--no-verify", "--json"])
        #expect(result.status == 0)
        let device = try #require(try world.report().results.first)
        #expect(device.outcome == .unverified)
        guard case .skipped = device.verification else {
            Issue.record("verification should be skipped, is \(device.verification)")
            return
        }
        // --json: every stdout line is one JSON object.
        for line in result.stdout.split(separator: "\n") {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)")
        }
    }

    @Test func aWrongTokenStopsTheDeployBeforeAnyDeviceIsTouched() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let result = try await world.deploy(Self.arguments, environment: ["HA_TOKEN": "not-the-token-123"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("was refused"))
        #expect(!result.stderr.contains("not-the-token-123"))
        #expect(try await world.usbmuxd.installedApps(udid: world.udids["mini4"]!).isEmpty)
    }

    /// Before: one device's dashboard that Home Assistant does not have failed the whole preflight,
    /// and nothing was deployed. Now that device fails, untouched, saying why; the others deploy.
    @Test func aDashboardOneDeviceNamesThatIsMissingFailsOnlyThatDevice() async throws {
        var kitchen = DeployWorld.defaultTwins[2]
        kitchen.extra = ["dashboard: dashboard-nowhere"]
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1], kitchen])
        defer { Task { await world.shutdown() } }
        let result = try await world.deploy(Self.arguments)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(!result.stderr.contains("Nothing was deployed"), "\(result.stderr)")
        let report = try world.report()
        let byID = Dictionary(uniqueKeysWithValues: report.results.map { ($0.id, $0) })
        #expect(byID["mini4"]?.outcome == .succeeded, "\(byID["mini4"]?.reason ?? "")")
        #expect(byID["kitchen"]?.outcome == .failed)
        #expect(byID["kitchen"]?.failedStep == "preflight")
        #expect(
            byID["kitchen"]?.reason?.contains("dashboard-nowhere") == true, "\(byID["kitchen"]?.reason ?? "")"
        )
        #expect(try await world.usbmuxd.installedApps(udid: world.udids["kitchen"]!).isEmpty)
        try assertNoSecrets(world, result)
    }

    /// A development build whose profile does not list the iPad: a real one answers
    /// ApplicationVerificationFailed after the whole upload. Now the device fails before a byte is
    /// sent, naming the profile and what to do; listed, it deploys.
    @Test func aBuildWhoseProfileDoesNotListTheDeviceIsRefusedBeforeAnyUpload() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        let profile = world.root.appendingPathComponent(
            "artifacts/modern/HADashboard.app/embedded.mobileprovision")
        var options = ProvisioningProfileFixture.Options(
            applicationIdentifier: "\(DemoAppBuilder.demoTeamID).\(DemoAppBuilder.defaultBundleID)",
            devices: ["00008030-0000000000000001"])
        try await ProvisioningProfileFixture.make(options).write(to: profile)

        // `plan` says it first, per device.
        let planned = try await world.deploy(["plan", "all", "--no-build", "--artifacts", "artifacts"])
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(
            planned.stdout.contains(
                "  profile:   refused — the build's provisioning profile 'HADashboard Development' (\(options.uuid)) "
                    + "does not list this device (UDID \(udid))"), "\(planned.stdout)")

        let refused = try await world.deploy(Self.arguments)
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.outcome == .failed && mini4.failedStep == "install")
        let reason = mini4.reason ?? ""
        #expect(reason.contains("'HADashboard Development' (\(options.uuid))"), "\(reason)")
        #expect(reason.contains("does not list this device (UDID \(udid))"), "\(reason)")
        #expect(reason.contains("nothing was sent"), "\(reason)")
        #expect(try await world.usbmuxd.installedApps(udid: udid).isEmpty)

        options.devices = [udid]
        options.uuid = UUID().uuidString
        options.expires = Date().addingTimeInterval(10 * 86_400 + 3_600)
        try await ProvisioningProfileFixture.make(options).write(to: profile)
        let covered = try await world.deploy(["plan", "all", "--no-build", "--artifacts", "artifacts"])
        #expect(
            covered.stdout.contains(
                "  profile:   'HADashboard Development' (\(options.uuid)) lists this device, until "),
            "\(covered.stdout)")
        let listed = try await world.deploy(Self.arguments)
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        #expect(try world.report().results.first?.outcome == .succeeded)
        // Installed with the app, the profile is the twin's: pymobiledevice3 lists it through misagent.
        let provision = Process()
        provision.executableURL = URL(fileURLWithPath: try ModernDeviceEndToEndTests.pymobiledevice3())
        provision.arguments = ["provision", "list", "--udid", udid]
        provision.environment = ProcessInfo.processInfo.environment.merging([
            "USBMUXD_SOCKET_ADDRESS": world.socket.replacingOccurrences(of: "UNIX:", with: "")
        ]) { $1 }
        let out = Pipe()
        provision.standardOutput = out
        provision.standardError = FileHandle.nullDevice
        try provision.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        provision.waitUntilExit()
        #expect(printed.contains(options.uuid), "pymobiledevice3 provision list: \(printed)")

        // `status` reads the installed build's profile from the device (misagent), with attention
        // 14 days before it expires (this one: in 10).
        let status = try await world.deploy(["status", "all", "--artifacts", "artifacts", "--json"])
        let installed = try #require(
            (StatusEndToEndTests.devices(status.stdout)["mini4"]?["profile"] as? [String: Any])?["value"]
                as? [String: Any], "\(status.stdout)")
        #expect(installed["uuid"] as? String == options.uuid)
        let table = try await world.deploy(["status", "all", "--artifacts", "artifacts"])
        #expect(
            table.stdout.contains("provisioning profile 'HADashboard Development' expires on ")
                && table.stdout.contains("(in 10 days)"), "\(table.stdout)")
    }

    /// An iPad behind its passcode: iOS will not mount the developer image, so a first deploy stops
    /// there with nothing sent; with the image mounted from an earlier deploy it takes the install
    /// but will not launch the app, and the device ends "installed only — not launched: locked" with
    /// the way on (not a success, exit 1), the new app on it. Unlocked, the next deploy verifies.
    @Test func aLockedDeviceEndsInstalledNotLaunchedLocked() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.inject(.passcodeLocked, udid: udid)
        let first = try await world.deploy(Self.arguments)
        #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
        let refused = try #require(try world.report().results.first)
        #expect(refused.outcome == .failed && refused.failedStep == "mount", "\(refused)")
        #expect(refused.reason?.contains("passcode-locked: unlock it") == true, "\(refused)")
        #expect(try await world.usbmuxd.installedApps(udid: udid).isEmpty, "nothing sent")

        try await world.usbmuxd.clearFaults(udid: udid, kind: "passcodeLocked")
        let unlocked = try await world.deploy(Self.arguments)
        #expect(unlocked.status == 0, "\(unlocked.stdout)\(unlocked.stderr)")

        try await world.usbmuxd.inject(.passcodeLocked, udid: udid)
        let locked = try await world.deploy(Self.arguments + ["--force"])
        #expect(locked.status == 1, "\(locked.stdout)\(locked.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(
            mini4.outcome == .installedOnly && !mini4.succeeded && mini4.failedStep == "launch", "\(mini4)")
        #expect(mini4.install == .installed, "\(mini4)")
        let reason = mini4.reason ?? ""
        #expect(reason.hasPrefix("not launched: locked — launch failed: "), "\(reason)")
        #expect(reason.contains("hadeploy mini4 --no-build"), "\(reason)")
        #expect((locked.stdout + locked.stderr).contains("not launched: locked"), "\(locked.stderr)")

        try await world.usbmuxd.clearFaults(udid: udid, kind: "passcodeLocked")
        let again = try await world.deploy(Self.arguments)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(try world.report().results.first?.outcome == .succeeded)
    }

    /// Restarted and not unlocked since (Before First Unlock): the twin opens nothing of the user's
    /// data — ideviceinstaller cannot list its apps — a deploy ends with "rebooted, needs one unlock",
    /// `status` says it as its own state, and `--wait-unlock` waits for the first unlock and goes on.
    @Test func beforeFirstUnlockIsSaidAndWaitUnlockWaitsForIt() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        let first = try await world.deploy(Self.arguments)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        try await world.usbmuxd.inject(.beforeFirstUnlock, udid: udid)

        let apps = try await TestHost.runner.run(
            ProcessCommand(
                "/usr/bin/ideviceinstaller", ["-u", udid, "-l"],
                environment: ["USBMUXD_SOCKET_ADDRESS": world.socket]), timeout: .seconds(30))
        #expect(
            apps.status != 0 || !apps.stdout.contains("io.hadeploy"),
            "ideviceinstaller listed the apps of a device not unlocked since boot: \(apps.stdout)\(apps.stderr)"
        )

        let refused = try await world.deploy(Self.arguments + ["--force"])
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.reason?.contains("rebooted, needs one unlock") == true, "\(mini4)")
        #expect(mini4.reason?.contains("--wait-unlock") == true, "\(mini4)")

        let status = try await world.deploy(["status", "all", "--artifacts", "artifacts", "--json"])
        let device = try #require(StatusEndToEndTests.devices(status.stdout)["mini4"], "\(status.stdout)")
        #expect(device["needsUnlock"] as? Bool == true, "\(device)")
        #expect((device["attention"] as? [String])?.first?.hasPrefix("rebooted, needs one unlock") == true)

        // Unlocked 4 s into a deploy that waits for it: the deploy goes on and verifies.
        let unlock = Task {
            try await Task.sleep(for: .seconds(4))
            try await world.usbmuxd.clearFaults(udid: udid, kind: "beforeFirstUnlock")
        }
        let waited = try await world.deploy(Self.arguments + ["--force", "--wait-unlock", "60s"])
        try await unlock.value
        #expect(waited.status == 0, "\(waited.stdout)\(waited.stderr)")
        #expect(
            (waited.stdout + waited.stderr).contains("for it to be unlocked (--wait-unlock)"),
            "\(waited.stderr)")
        #expect(try world.report().results.first?.outcome == .succeeded)
    }

    /// "Reset Location & Privacy" on the iPad: it trusts no host. The Debian tools get InvalidHostID,
    /// and the deploy ends that device at connect with hadeploy's own way on, by its name.
    @Test func aResetTrustSaysPairItAgainByName() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let udid = try #require(world.udids["mini4"])
        try await world.usbmuxd.resetTrust(udid: udid)
        let info = try await TestHost.runner.run(
            ProcessCommand(
                "/usr/bin/ideviceinfo", ["-u", udid, "-k", "DeviceName"],
                environment: ["USBMUXD_SOCKET_ADDRESS": world.socket]), timeout: .seconds(30))
        #expect(
            info.status != 0 && (info.stdout + info.stderr).contains("-21"), "\(info.stdout)\(info.stderr)")

        let run = try await world.deploy(Self.arguments)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let mini4 = try #require(try world.report().results.first)
        #expect(mini4.outcome == .failed && mini4.failedStep == "connect", "\(mini4)")
        #expect(mini4.reason?.contains("pair it again: `hadeploy pair mini4`") == true, "\(mini4)")
        #expect(try await world.usbmuxd.installedApps(udid: udid).isEmpty, "nothing sent")
    }

    @Test func homeAssistantStoppedMidRunGivesThatReason() async throws {
        let server = try await HomeAssistantServer.start()
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]], ha: server)
        defer {
            Task {
                await world.shutdown()
                try? await server.stop()
            }
        }
        // Slow the link so the install is under way when Home Assistant goes away.
        try await world.usbmuxd.inject(.throttle(bytesPerSecond: 2_000), udid: world.udids["mini4"]!)
        async let run = world.deploy(Self.arguments)
        #expect(try await world.uploadStarted("mini4"), "the upload began")
        try await server.stop()
        let result = try await run
        #expect(result.status == 1)
        let device = try #require(try world.report().results.first)
        #expect(device.outcome == .failed)
        // Depending on the moment it went away: the subscription could not be made, or the wait lost it.
        let reason = device.reason ?? ""
        #expect(reason.contains("unreachable") || reason.contains("cannot reach Home Assistant"), "\(reason)")
    }

    /// Ctrl-C and SIGTERM (a cancelled CI job) stop cleanly, with the signal's own exit status (130,
    /// 143) rather than the 1 of a failed device (issue 25).
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func ctrlCMidUploadLeavesNoHalfInstalledAppAndAPartialReport(signal: Int32, status: Int32) async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        try await world.usbmuxd.inject(.throttle(bytesPerSecond: 1_000), udid: world.udids["mini4"]!)
        // Run hadeploy directly so it can be sent SIGINT mid-upload.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try await HADeployBinary.path)
        process.arguments = Self.arguments
        process.currentDirectoryURL = world.root
        var environment = HADeployBinary.baseEnvironment(home: world.root)
        environment["USBMUXD_SOCKET_ADDRESS"] = world.socket
        environment["XDG_CACHE_HOME"] = world.root.appendingPathComponent("cache").path
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // At 1 kB/s the run is still in its lockdown and TLS exchanges then (the app's own upload
        // starts about 20 s in): interrupted mid-transfer, before anything is installed.
        try await Task.sleep(for: .seconds(5))
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!process.isRunning, "hadeploy must stop after Ctrl-C")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        #expect(process.terminationStatus == status)
        #expect(try await world.usbmuxd.installedApps(udid: world.udids["mini4"]!).isEmpty)
        let report = try world.report()
        #expect(report.interrupted)
        let locks =
            (try? FileManager.default.contentsOfDirectory(
                atPath: world.root.appendingPathComponent("cache/hadeploy/locks").path)) ?? []
        #expect(locks.isEmpty, "locks left behind: \(locks)")
    }
}

/// What `hadeploy plan --json` prints is what `hadeploy … --json` runs: the same devices, the same
/// twins' UDIDs, the same steps in the same order.
@Suite(.serialized)
struct PlanEqualsRunTests {
    static func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Step ids each device started, in order (a retried step counts once, as the plan lists it).
    static func executedSteps(_ events: [[String: Any]]) -> [String: [String]] {
        var steps: [String: [String]] = [:]
        for event in events where event["event"] as? String == "step_started" {
            guard let device = event["device"] as? String, let step = event["step"] as? String else {
                continue
            }
            if steps[device]?.last != step { steps[device, default: []].append(step) }
        }
        return steps
    }

    static func plannedSteps(_ json: String) throws -> (steps: [String: [String]], udids: [String: String]) {
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        var steps: [String: [String]] = [:]
        var udids: [String: String] = [:]
        for device in try #require(plan["devices"] as? [[String: Any]]) {
            let id = try #require(device["id"] as? String)
            steps[id] = (device["steps"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            udids[id] = device["udid"] as? String
        }
        return (steps, udids)
    }

    @Test func theVirtualRunExecutesThePrintedPlan() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[0], DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        // --virtual: hadeploy starts its own twins (state in .hadeploy/virtual), not the world's.
        let arguments = ["all", "--virtual", "--no-build", "--report", "report-virtual"]
        let plan = try await world.deploy(
            ["plan"] + arguments + ["--json"], environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try Self.plannedSteps(plan.stdout)
        #expect(planned.udids.keys.sorted() == ["ipad2", "mini4"])
        #expect(planned.udids.values.allSatisfy { !$0.hasPrefix("<unset") && $0.count >= 24 })

        let run = try await world.deploy(arguments + ["--json"], environment: ["USBMUXD_SOCKET_ADDRESS": ""])
        #expect(run.status == 0, "\(run.stderr)")
        let events = Self.events(run.stdout)
        #expect(Self.executedSteps(events) == planned.steps)
        // The same twins: their UDIDs are kept in the state directory from plan to run.
        let started = try #require(events.first { $0["event"] as? String == "run_started" })
        #expect((started["devices"] as? [String])?.sorted() == ["ipad2", "mini4"])
        let report = try world.report("report-virtual")
        #expect(report.results.allSatisfy { $0.outcome == .succeeded || $0.outcome == .unverified })
        #expect(report.results.allSatisfy { $0.steps.map(\.name) == planned.steps[$0.id] })
        // The twins took the demo build because it is signed for them, as a real build is: its
        // development profile lists each twin of its flavour (read by ideviceprovision, not hadeploy).
        let profile = world.root.appendingPathComponent(
            ".hadeploy/virtual/demo-apps/modern/HADashboard.app/embedded.mobileprovision")
        let dump = try await ToolRun.run("ideviceprovision", ["dump", profile.path])
        let text = String(decoding: dump.standardOutput, as: UTF8.self)
        let udid = try #require(planned.udids["mini4"])
        #expect(dump.status == 0, "\(String(decoding: dump.standardError, as: UTF8.self))")
        #expect(text.contains("ProvisionedDevices") && text.contains(udid), "\(text)")
        #expect(text.contains("application-identifier: HADEPLOYDM.com.example.hadashboard"), "\(text)")
    }

    @Test func aUSBRunExecutesThePrintedPlan() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let plan = try await world.deploy(["plan", "all", "--no-build", "--report", "report", "--json"])
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try Self.plannedSteps(plan.stdout)
        #expect(
            planned.steps["mini4"] == [
                "connect", "mount", "install", "subscribe", "launch", "verify", "crash_check", "screenshot",
            ])
        let run = try await world.deploy(DeployEndToEndTests.arguments + ["--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.executedSteps(Self.events(run.stdout)) == planned.steps)
    }
}

/// The token is in no process's arguments while a USB deploy launches the app (what `ps` shows any
/// local user), and it still reaches the app.
@Suite(.serialized)
struct TokenNotInProcessListTests {
    @Test func aUSBDeployNeverPutsTheTokenOnACommandLine() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let sampler = ProcessListSampler(secrets: [world.ha.token])
        let result = try await world.deploy(DeployEndToEndTests.arguments)
        let (leaks, samples) = sampler.stop()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(samples > 50)
        #expect(leaks.isEmpty, "\(leaks.count) command lines held the token")
        let running = try #require(try await world.usbmuxd.runningApp(udid: world.udids["mini4"]!))
        let index = try #require(running.arguments.firstIndex(of: "-HAAccessToken"))
        #expect(running.arguments[index + 1] == world.ha.token, "the app on the device did get it")
    }
}
