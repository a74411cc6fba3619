import Foundation
import ImageCodec
import NIOConcurrencyHelpers
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("Developer disk image, screenshots, debugserver, crash reports")
    struct DeveloperServicesTests {
        /// A fake Developer disk image and signature (random bytes: the emulator cannot check Apple's signature).
        static func developerImage(in directory: URL) throws -> (image: URL, signature: URL) {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let image = directory.appendingPathComponent("DeveloperDiskImage.dmg")
            let signature = directory.appendingPathComponent("DeveloperDiskImage.dmg.signature")
            try TestBundles.writeRandomFile(image, bytes: 300_000)
            try TestBundles.writeRandomFile(signature, bytes: 128)
            return (image, signature)
        }

        static func mount(_ emulator: EmulatorFixture, _ udid: String) async throws -> ToolResult {
            let files = try developerImage(in: emulator.directory.appendingPathComponent("ddi"))
            return try await emulator.run(
                "ideviceimagemounter", ["-u", udid, files.image.path, files.signature.path])
        }

        @Test("screenshotr is refused until the image is mounted, then returns a real PNG of the screen")
        func screenshotAfterMount() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipad2, Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            for (name, width, height) in [("ipad2", 768, 1024), ("mini4", 1536, 2048)] {
                let udid = await emulator.udid(name)
                let output = emulator.directory.appendingPathComponent("\(name).png")
                let refused = try await emulator.run("idevicescreenshot", ["-u", udid, output.path])
                #expect(
                    refused.status != 0 && refused.output.contains("Could not start screenshotr service"),
                    "\(refused)")

                let mounted = try await Self.mount(emulator, udid)
                #expect(mounted.status == 0 && mounted.stdout.contains("Done."), "\(mounted)")
                let lookup = try await emulator.run("ideviceimagemounter", ["-u", udid, "-l"])
                #expect(lookup.status == 0 && lookup.stdout.contains("Complete"), "\(lookup)")
                let twice = try await Self.mount(emulator, udid)
                #expect(twice.output.contains("ImageMountFailed"), "\(twice)")

                let shot = try await emulator.run("idevicescreenshot", ["-u", udid, output.path])
                #expect(shot.status == 0, "\(shot)")
                let data = try Data(contentsOf: output)
                #expect(ImageFormat.detect(data) == .png)
                let image = try ImageCodec.decode(data)
                #expect(image.width == width && image.height == height)
                // Home screen: the springboard background colour fills the lower part.
                #expect(
                    image.color(x: width / 2, y: height - 10)
                        == RGBImage.Color(red: 0x1E, green: 0x3A, blue: 0x5F))
            }
        }

        @Test("TIFF screenshots (iOS 8-era format) are big-endian TIFFs idevicescreenshot names .tiff")
        func tiffScreenshot() async throws {
            var profile = Profiles.ipad2
            profile.screenshotFormat = .tiff
            let emulator = try await EmulatorFixture.start([profile])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("ipad2")
            #expect(try await Self.mount(emulator, udid).status == 0)
            // Without a file name the tool sniffs the format and picks the extension.
            let shot = try await ToolRunner.run(
                "idevicescreenshot", ["-u", udid], socket: emulator.socket, directory: emulator.directory)
            #expect(shot.status == 0, "\(shot)")
            let names = try FileManager.default.contentsOfDirectory(atPath: emulator.directory.path)
            let tiff = try #require(
                names.first { $0.hasPrefix("screenshot-") && $0.hasSuffix(".tiff") }, "\(names)")
            let data = try Data(contentsOf: emulator.directory.appendingPathComponent(tiff))
            #expect(data.prefix(4) == Data([0x4D, 0x4D, 0x00, 0x2A]))
            let image = try ImageCodec.decode(data)
            #expect(image.width == 768 && image.height == 1024)
            let png = try ImageCodec.pngData(fromScreenshot: data)
            #expect(try ImageCodec.decode(png) == image)
        }

        @Test("iOS 17+ devices refuse screenshotr and debugserver even when mounted; install/upgrade work")
        func modernDevicesRefuseDeveloperServices() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini5])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini5")
            _ = try await Self.mount(emulator, udid)
            let shot = try await emulator.run(
                "idevicescreenshot", ["-u", udid, emulator.directory.appendingPathComponent("x.png").path])
            #expect(
                shot.status != 0 && shot.output.contains("Could not start screenshotr service"), "\(shot)")
            // Lockdown-level services keep working on iOS 26: install, upgrade, list.
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(
                in: work, bundleID: "io.hadeploy.dashboard", executable: TestBundles.machO(.arm64))
            let install = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path])
            #expect(install.status == 0 && install.stdout.contains("Install: Complete"), "\(install)")
            let newer = try TestBundles.makeApp(
                in: work.appendingPathComponent("v2"), bundleID: "io.hadeploy.dashboard", version: "43",
                executable: TestBundles.machO(.arm64))
            let upgrade = try await emulator.run("ideviceinstaller", ["-u", udid, "-g", newer.path])
            #expect(upgrade.status == 0 && upgrade.stdout.contains("Upgrade: Complete"), "\(upgrade)")
            let list = try await emulator.run("ideviceinstaller", ["-u", udid, "-l"])
            #expect(list.stdout.contains("io.hadeploy.dashboard, \"43\""), "\(list)")
            let debug = try await emulator.run("idevicedebug", ["-u", udid, "run", "io.hadeploy.dashboard"])
            #expect(
                debug.status != 0 && debug.output.contains("Could not start com.apple.debugserver"),
                "\(debug)")
        }

        @Test(
            "idevicedebug run launches the installed app with its arguments (plain iOS 9, TLS proxy iOS 15)")
        func debugRun() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipad2, Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(in: work, bundleID: "io.hadeploy.dashboard")
            for name in ["ipad2", "mini4"] {
                let udid = await emulator.udid(name)
                #expect(try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path]).status == 0)
                let noImage = try await emulator.run(
                    "idevicedebug", ["-u", udid, "run", "io.hadeploy.dashboard"])
                #expect(
                    noImage.status != 0 && noImage.output.contains("Could not start com.apple.debugserver"),
                    "\(noImage)")
                #expect(try await Self.mount(emulator, udid).status == 0)

                let seen = NIOLockedValueBox<VirtualRunningApp?>(nil)
                let daemon = emulator.daemon
                let run = try await ToolRunner.run(
                    "idevicedebug",
                    [
                        "-u", udid, "-e", "LANG=de_DE", "run", "io.hadeploy.dashboard", "-HADashboard",
                        "lobby kiosk",
                    ],
                    socket: emulator.socket, timeout: 30,
                    interruptWhen: {
                        guard let app = try? await daemon.runningApp(udid: udid) else { return false }
                        seen.withLockedValue { $0 = app }
                        return true
                    })
                #expect(!run.timedOut, "\(run)")
                let app = try #require(seen.withLockedValue { $0 }, "the app never ran: \(run)")
                #expect(app.bundleIdentifier == "io.hadeploy.dashboard")
                #expect(
                    app.arguments.first?.hasSuffix("/Dashboard.app/Dashboard") == true, "\(app.arguments)")
                #expect(Array(app.arguments.dropFirst()) == ["-HADashboard", "lobby kiosk"])
                #expect(app.environment == ["LANG=de_DE"])
                // SIGINT makes idevicedebug send `k`; the app is gone afterwards.
                #expect(run.status == 0, "\(run)")
                #expect(try await emulator.daemon.runningApp(udid: udid) == nil)
            }
        }

        @Test(
            "a crash on launch fails idevicedebug and leaves a report idevicecrashreport moves off the device"
        )
        func crashOnLaunch() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let app = try TestBundles.makeApp(
                in: emulator.directory.appendingPathComponent("build"), bundleID: "io.hadeploy.dashboard")
            #expect(try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path]).status == 0)
            #expect(try await Self.mount(emulator, udid).status == 0)
            try await emulator.daemon.inject(.crashOnLaunch, udid: udid)

            let run = try await emulator.run(
                "idevicedebug", ["-u", udid, "run", "io.hadeploy.dashboard"], timeout: 30)
            #expect(!run.timedOut && run.status != 0, "\(run)")

            let reports = emulator.directory.appendingPathComponent("reports")
            try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: true)
            let pull = try await emulator.run("idevicecrashreport", ["-u", udid, reports.path])
            #expect(pull.status == 0 && pull.stdout.contains("Move: /Dashboard-"), "\(pull)")
            let files = try FileManager.default.contentsOfDirectory(atPath: reports.path)
            let report = try #require(
                files.first { $0.hasPrefix("Dashboard-") && $0.hasSuffix(".ips") }, "\(files)")
            // iOS 15's .ips: a line of JSON metadata (bug_type 309 = app crash), then the JSON report.
            let text = try String(contentsOf: reports.appendingPathComponent(report), encoding: .utf8)
            let lines = text.split(separator: "\n", maxSplits: 1).map { Data($0.utf8) }
            let metadata = try JSONSerialization.jsonObject(with: lines[0]) as? [String: Any]
            #expect(
                metadata?["bug_type"] as? String == "309"
                    && metadata?["bundleID"] as? String == "io.hadeploy.dashboard")
            let body = try JSONSerialization.jsonObject(with: lines[1]) as? [String: Any]
            #expect((body?["exception"] as? [String: Any])?["type"] as? String == "EXC_CRASH", "\(text)")
            let again = try await emulator.run("idevicecrashreport", ["-u", udid, reports.path])
            #expect(!again.stdout.contains("Move: /Dashboard-"), "moved, not copied: \(again)")
        }

        @Test("a reboot detaches the device, unmounts the image and re-attaches it")
        func reboot() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            await emulator.daemon.setRebootDuration(.milliseconds(800))
            let udid = await emulator.udid("mini4")
            #expect(try await Self.mount(emulator, udid).status == 0)
            let before = await emulator.daemon.devices().first?.deviceID
            try await emulator.daemon.reboot(udid: udid)
            let during = try await emulator.run("idevice_id", ["-l"])
            #expect(!during.stdout.contains(udid), "\(during)")
            try await Task.sleep(for: .seconds(1.5))
            let after = try await emulator.run("idevice_id", ["-l"])
            #expect(after.stdout.contains(udid), "\(after)")
            #expect(await emulator.daemon.devices().first?.deviceID != before)
            let shot = try await emulator.run(
                "idevicescreenshot", ["-u", udid, emulator.directory.appendingPathComponent("r.png").path])
            #expect(
                shot.status != 0 && shot.output.contains("Could not start screenshotr service"), "\(shot)")
            // Lockdown-level services keep working on iOS 26: install, upgrade, list.
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(
                in: work, bundleID: "io.hadeploy.dashboard", executable: TestBundles.machO(.arm64))
            let install = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path])
            #expect(install.status == 0 && install.stdout.contains("Install: Complete"), "\(install)")
            let newer = try TestBundles.makeApp(
                in: work.appendingPathComponent("v2"), bundleID: "io.hadeploy.dashboard", version: "43",
                executable: TestBundles.machO(.arm64))
            let upgrade = try await emulator.run("ideviceinstaller", ["-u", udid, "-g", newer.path])
            #expect(upgrade.status == 0 && upgrade.stdout.contains("Upgrade: Complete"), "\(upgrade)")
            let list = try await emulator.run("ideviceinstaller", ["-u", udid, "-l"])
            #expect(list.stdout.contains("io.hadeploy.dashboard, \"43\""), "\(list)")
            let debug = try await emulator.run("idevicedebug", ["-u", udid, "run", "io.hadeploy.dashboard"])
            #expect(
                debug.status != 0 && debug.output.contains("Could not start com.apple.debugserver"),
                "\(debug)")
        }

        @Test("a stalled device makes the tools give up with an error instead of hanging")
        func stall() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            try await emulator.daemon.inject(.stall(at: .usbmuxConnect), udid: udid)
            let info = try await emulator.run("ideviceinfo", ["-u", udid], timeout: 40)
            #expect(!info.timedOut && info.status != 0, "\(info)")
        }
    }
}
