import Foundation
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("installation_proxy and AFC against ideviceinstaller")
    struct InstallerTests {
        @Test("install an .ipa, list it, uninstall it (iOS 15.8 iPad mini 4)")
        func ipaLifecycle() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(
                in: work, bundleID: "io.hadeploy.dashboard", payloadBytes: 3_000_000)
            let ipa = try TestBundles.makeIPA(from: app, in: work, name: "Dashboard")

            // -w also waits for the application_installed notification (notification_proxy).
            let install = try await emulator.run("ideviceinstaller", ["-u", udid, "-w", "-i", ipa.path])
            #expect(install.status == 0, "\(install)")
            #expect(install.stdout.contains("Install: ExtractingPackage (15%)"), "\(install)")
            #expect(install.stdout.contains("Install: Complete"), "\(install)")
            let installed = try await emulator.daemon.installedApps(udid: udid)
            #expect(installed.map(\.bundleIdentifier) == ["io.hadeploy.dashboard"])
            #expect(installed.first?.architectures == ["armv7", "arm64"])
            #expect(installed.first?.packageType == "ipa")

            let list = try await emulator.run("ideviceinstaller", ["-u", udid, "-l"])
            #expect(list.status == 0, "\(list)")
            #expect(list.stdout.contains("io.hadeploy.dashboard, \"42\", \"HA Dashboard\""), "\(list)")
            #expect(!list.stdout.contains("com.apple.mobilesafari"), "user apps only by default")

            let system = try await emulator.run("ideviceinstaller", ["-u", udid, "-l", "-o", "list_system"])
            #expect(system.stdout.contains("com.apple.mobilesafari"), "\(system)")

            let uninstall = try await emulator.run(
                "ideviceinstaller", ["-u", udid, "-U", "io.hadeploy.dashboard"])
            #expect(uninstall.status == 0 && uninstall.stdout.contains("Uninstall: Complete"), "\(uninstall)")
            let after = try await emulator.run("ideviceinstaller", ["-u", udid, "-l"])
            #expect(!after.stdout.contains("io.hadeploy.dashboard"), "\(after)")
        }

        @Test(
            "an .app directory installs as a Developer package on the armv7 iPad 2; installs survive a restart"
        )
        func appDirectory() async throws {
            let directory = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let emulator = try await EmulatorFixture.start([Profiles.ipad2], directory: directory)
            let udid = await emulator.udid("ipad2")
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(
                in: work, bundleID: "io.hadeploy.legacy", executable: TestBundles.machO(.armv7))
            try FileManager.default.createDirectory(
                at: app.appendingPathComponent("Base.lproj"), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: app.appendingPathComponent("Base.lproj/Main.strings"))

            let install = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", app.path])
            #expect(install.status == 0 && install.stdout.contains("Install: Complete"), "\(install)")
            let installed = try await emulator.daemon.installedApps(udid: udid)
            #expect(installed.first?.packageType == "developer")
            await emulator.stop(removeState: false)

            let again = try await EmulatorFixture.start([Profiles.ipad2], directory: directory)
            defer { Task { await again.stop(removeState: false) } }
            let list = try await again.run("ideviceinstaller", ["-u", udid, "-l"])
            #expect(list.stdout.contains("io.hadeploy.legacy, \"42\""), "\(list)")
        }

        @Test("bad packages fail like a real device: arm64-only on armv7, no Info.plist, not a Mach-O")
        func badPackages() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipad2])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("ipad2")
            let work = emulator.directory.appendingPathComponent("build")

            let arm64 = try TestBundles.makeApp(
                in: work.appendingPathComponent("a"), bundleID: "io.hadeploy.modern",
                executable: TestBundles.machO(.arm64))
            let ipa = try TestBundles.makeIPA(from: arm64, in: work, name: "Modern")
            let wrongArch = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", ipa.path])
            #expect(wrongArch.status != 0, "\(wrongArch)")
            #expect(wrongArch.stderr.contains("IncorrectArchitecture"), "\(wrongArch)")
            #expect(wrongArch.stderr.contains("64-bit Mach-O"), "\(wrongArch)")

            // ideviceinstaller itself refuses a bundle without Info.plist (after uploading it)…
            let noPlist = try TestBundles.makeApp(
                in: work.appendingPathComponent("b"), bundleID: "io.hadeploy.broken", infoPlist: false)
            let missing = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", noPlist.path])
            #expect(missing.status != 0 && missing.stderr.contains("could not locate"), "\(missing)")
            // …so the device-side inspection is reached with an Info.plist that lacks CFBundleExecutable.
            let noExecutable = try TestBundles.makeApp(
                in: work.appendingPathComponent("b2"), bundleID: "io.hadeploy.broken", executableKey: false)
            let inspection = try await emulator.run(
                "ideviceinstaller", ["-u", udid, "-i", noExecutable.path])
            #expect(
                inspection.status != 0 && inspection.stderr.contains("MissingBundleExecutable"),
                "\(inspection)")

            let script = try TestBundles.makeApp(
                in: work.appendingPathComponent("c"), bundleID: "io.hadeploy.script",
                executable: Data("#!/bin/sh\n".utf8))
            let notMachO = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", script.path])
            #expect(
                notMachO.status != 0 && notMachO.stderr.contains("ApplicationVerificationFailed"),
                "\(notMachO)")
            #expect(try await emulator.daemon.installedApps(udid: udid).isEmpty)
        }

        @Test("faults: failed install, upload cut mid-way, throttled link")
        func installFaults() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.iphone16])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("iphone16")
            let work = emulator.directory.appendingPathComponent("build")
            let app = try TestBundles.makeApp(
                in: work, bundleID: "io.hadeploy.faulty", payloadBytes: 4_000_000)
            let ipa = try TestBundles.makeIPA(from: app, in: work, name: "Faulty")

            try await emulator.daemon.inject(
                .failInstall(
                    error: "ApplicationVerificationFailed", description: "Failed to verify code signature"),
                udid: udid)
            let failed = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", ipa.path])
            #expect(failed.status != 0, "\(failed)")
            #expect(failed.stderr.contains("ApplicationVerificationFailed"), "\(failed)")
            try await emulator.daemon.clearFaults(udid: udid)

            try await emulator.daemon.inject(.dropUploadAfter(bytes: 1_500_000), udid: udid)
            let dropped = try await emulator.run(
                "ideviceinstaller", ["-u", udid, "-i", ipa.path], timeout: 60)
            // ideviceinstaller 1.1.1 reports the broken upload but still exits 0 (ideviceinstaller#149),
            // exactly as with a real cable pulled mid-upload.
            #expect(!dropped.timedOut, "\(dropped)")
            #expect(dropped.stderr.contains("AFC Write error"), "\(dropped)")
            #expect(!dropped.stdout.contains("Install: Complete"), "\(dropped)")
            #expect(try await emulator.daemon.installedApps(udid: udid).isEmpty)
            try await emulator.daemon.clearFaults(udid: udid)

            // 4 MB at 2 MB/s needs about 2 s; unthrottled it takes a fraction of that.
            try await emulator.daemon.inject(.throttle(bytesPerSecond: 2_000_000), udid: udid)
            let slow = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", ipa.path], timeout: 60)
            #expect(slow.status == 0, "\(slow)")
            #expect(slow.seconds >= 1.8, "\(slow)")
            try await emulator.daemon.clearFaults(udid: udid)
            let fast = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", ipa.path], timeout: 60)
            #expect(fast.status == 0 && fast.seconds < slow.seconds, "\(fast)")
        }
    }
}
