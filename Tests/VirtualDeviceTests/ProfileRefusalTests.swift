import Foundation
import TestSupport
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    /// A twin refuses what a real iPad refuses in a build's provisioning profile, as the Debian tools
    /// see it: a profile that does not list it, or that has expired, or no profile at all while none
    /// installed covers the app, ends installation_proxy with ApplicationVerificationFailed and the
    /// device keeps the app it had.
    @Suite("provisioning profiles the twin refuses, against ideviceinstaller")
    struct ProfileRefusalTests {
        @Test("a profile that does not list the twin, or has expired, is refused; the installed app stays")
        func refusedProfiles() async throws {
            let emulator = try await EmulatorFixture.start([Profiles.ipadMini4])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let work = emulator.directory.appendingPathComponent("build")
            let bundleID = "io.hadeploy.signed"
            func ipa(_ version: String, profile: Data) throws -> URL {
                let folder = work.appendingPathComponent(version)
                let app = try TestBundles.makeApp(in: folder, bundleID: bundleID, version: version)
                try profile.write(to: app.appendingPathComponent("embedded.mobileprovision"))
                return try TestBundles.makeIPA(from: app, in: folder, name: "Dashboard")
            }
            var options = ProvisioningProfileFixture.Options(
                applicationIdentifier: "HADEPLOYDM.\(bundleID)", devices: [udid])
            let listed = try await emulator.run(
                "ideviceinstaller",
                [
                    "-u", udid, "-i",
                    try ipa("41", profile: try await ProvisioningProfileFixture.make(options)).path,
                ])
            #expect(listed.status == 0 && listed.stdout.contains("Install: Complete"), "\(listed)")
            // Installed with the app, the profile is the device's: misagent lists it.
            let listedUUID = options.uuid
            let profiles = try await emulator.run("ideviceprovision", ["-u", udid, "list"])
            #expect(profiles.status == 0, "\(profiles)")
            #expect(profiles.stdout.contains("\(listedUUID) - HADashboard Development"), "\(profiles)")

            options.devices = ["00008030-0000000000000001"]
            let unlisted = try await emulator.run(
                "ideviceinstaller",
                [
                    "-u", udid, "-i",
                    try ipa("42", profile: try await ProvisioningProfileFixture.make(options)).path,
                ])
            #expect(unlisted.output.contains("ApplicationVerificationFailed"), "\(unlisted)")
            #expect(
                unlisted.output.contains("A valid provisioning profile for this executable was not found"),
                "\(unlisted)")

            options.devices = [udid]
            options.expires = Date().addingTimeInterval(-86_400)
            let expired = try await emulator.run(
                "ideviceinstaller",
                [
                    "-u", udid, "-i",
                    try ipa("43", profile: try await ProvisioningProfileFixture.make(options)).path,
                ])
            #expect(expired.output.contains("ApplicationVerificationFailed"), "\(expired)")
            #expect(expired.output.contains("0xe8008018"), "\(expired)")

            // No code signature at all: refused as installd refuses it.
            let unsignedFolder = work.appendingPathComponent("44")
            let unsignedApp = try TestBundles.makeApp(
                in: unsignedFolder, bundleID: bundleID, version: "44",
                executable: TestBundles.machO(.arm64, signed: false))
            let unsigned = try await emulator.run(
                "ideviceinstaller",
                [
                    "-u", udid, "-i",
                    try TestBundles.makeIPA(from: unsignedApp, in: unsignedFolder, name: "Dashboard").path,
                ])
            #expect(unsigned.output.contains("ApplicationVerificationFailed"), "\(unsigned)")
            #expect(unsigned.output.contains("0xe800801c (No code signature found.)"), "\(unsigned)")

            let installed = try await emulator.daemon.installedApps(udid: udid)
            #expect(installed.map(\.bundleVersion) == ["41"], "the device keeps the app it had")
            // A refused build's profile was not installed; a profile is removed by its UUID.
            let after = try await emulator.run("ideviceprovision", ["-u", udid, "list"])
            #expect(after.stdout.contains("Device has 1 provisioning profile"), "\(after)")
            let removed = try await emulator.run("ideviceprovision", ["-u", udid, "remove", listedUUID])
            #expect(removed.status == 0, "\(removed)")
            let none = try await emulator.run("ideviceprovision", ["-u", udid, "list"])
            #expect(none.stdout.contains("Device has 0 provisioning profiles"), "\(none)")

            // A build with no profile of its own is refused while no installed profile covers it, and
            // runs once one is installed (ideviceprovision install), as on a real device.
            let bare = work.appendingPathComponent("45")
            let bareIPA = try TestBundles.makeIPA(
                from: try TestBundles.makeApp(in: bare, bundleID: bundleID, version: "45", profile: nil),
                in: bare,
                name: "Dashboard")
            let refused = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", bareIPA.path])
            #expect(refused.output.contains("ApplicationVerificationFailed"), "\(refused)")
            #expect(refused.output.contains("0xe8008015"), "\(refused)")
            options.expires = Date().addingTimeInterval(86_400)
            let profileFile = work.appendingPathComponent("covering.mobileprovision")
            try await ProvisioningProfileFixture.make(options).write(to: profileFile)
            let added = try await emulator.run("ideviceprovision", ["-u", udid, "install", profileFile.path])
            #expect(added.status == 0, "\(added)")
            let taken = try await emulator.run("ideviceinstaller", ["-u", udid, "-i", bareIPA.path])
            #expect(taken.status == 0 && taken.stdout.contains("Install: Complete"), "\(taken)")
            let now = try await emulator.daemon.installedApps(udid: udid)
            #expect(now.map(\.bundleVersion) == ["45"], "\(now)")
        }
    }
}
