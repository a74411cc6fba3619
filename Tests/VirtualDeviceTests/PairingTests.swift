import Foundation
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("pairing: host pairs on first contact, faults, state across restarts")
    struct PairingTests {
        static func hostPairsProfile(_ name: String, _ type: String) -> VirtualDeviceProfile {
            var profile = Profiles.named(name, type)
            profile.pairing = .hostPairs
            return profile
        }

        @Test("idevicepair pair / validate / unpair on an unpaired iOS 9 and iOS 15 device")
        func pairValidateUnpair() async throws {
            let emulator = try await EmulatorFixture.start([
                Self.hostPairsProfile("fresh9", "iPad2,1"), Self.hostPairsProfile("fresh15", "iPad5,1"),
            ])
            defer { Task { await emulator.stop() } }
            for name in ["fresh9", "fresh15"] {
                let udid = await emulator.udid(name)
                let record = emulator.directory.appendingPathComponent("usbmuxd/\(udid).plist")
                #expect(!FileManager.default.fileExists(atPath: record.path))

                let pair = try await emulator.run("idevicepair", ["-u", udid, "pair"])
                #expect(pair.status == 0, "\(pair)")
                #expect(pair.stdout.contains("SUCCESS: Paired with device \(udid)"), "\(pair)")
                #expect(
                    FileManager.default.fileExists(atPath: record.path), "SavePairRecord stored the record")
                // The record holds the host's private key: owner-only, in an owner-only directory, as
                // are the device's own key and state.
                let devices = emulator.directory.appendingPathComponent("devices")
                let deviceFolders = try FileManager.default.contentsOfDirectory(atPath: devices.path)
                for (path, mode) in [
                    (record.path, 0o600), (record.deletingLastPathComponent().path, 0o700),
                ]
                    + deviceFolders.flatMap({ folder in
                        [
                            (devices.appendingPathComponent("\(folder)/device-key.pem").path, 0o600),
                            (devices.appendingPathComponent("\(folder)/state.json").path, 0o600),
                            (devices.appendingPathComponent(folder).path, 0o700),
                        ]
                    })
                {
                    let attributes = try FileManager.default.attributesOfItem(atPath: path)
                    #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == mode, "\(path)")
                }

                let validate = try await emulator.run("idevicepair", ["-u", udid, "validate"])
                #expect(
                    validate.status == 0 && validate.stdout.contains("SUCCESS: Validated pairing"),
                    "\(validate)")

                let info = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "DeviceName"])
                #expect(info.status == 0, "\(info)")

                let unpair = try await emulator.run("idevicepair", ["-u", udid, "unpair"])
                #expect(unpair.status == 0 && unpair.stdout.contains("SUCCESS: Unpaired"), "\(unpair)")
                #expect(
                    !FileManager.default.fileExists(atPath: record.path),
                    "DeletePairRecord removed the record")
            }
        }

        @Test("trust dialog pending and passcode lock show up as the real pairing errors")
        func pairingFaults() async throws {
            let emulator = try await EmulatorFixture.start([Self.hostPairsProfile("locked", "iPad5,1")])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("locked")

            try await emulator.daemon.inject(.pairingDialogPending, udid: udid)
            let pending = try await emulator.run("idevicepair", ["-u", udid, "pair"])
            #expect(pending.status != 0, "\(pending)")
            #expect(pending.output.contains("Please accept the trust dialog"), "\(pending)")
            // A tool that needs a session fails the same way instead of hanging.
            let info = try await emulator.run("ideviceinfo", ["-u", udid])
            #expect(info.status != 0 && info.output.contains("Pairing dialog response pending"), "\(info)")

            try await emulator.daemon.clearFaults(udid: udid)
            try await emulator.daemon.inject(.passcodeLocked, udid: udid)
            let locked = try await emulator.run("idevicepair", ["-u", udid, "pair"])
            #expect(locked.status != 0 && locked.output.contains("passcode is set"), "\(locked)")

            try await emulator.daemon.clearFaults(udid: udid)
            let trusted = try await emulator.run("idevicepair", ["-u", udid, "pair"])
            #expect(trusted.status == 0, "\(trusted)")
        }

        @Test("pairing, UDID and made-up identity survive an emulator restart")
        func stateSurvivesRestart() async throws {
            let directory = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let first = try await EmulatorFixture.start(
                [Self.hostPairsProfile("keeper", "iPad11,1")], directory: directory)
            let udid = await first.udid("keeper")
            let pair = try await first.run("idevicepair", ["-u", udid, "pair"])
            #expect(pair.status == 0, "\(pair)")
            await first.stop(removeState: false)

            let second = try await EmulatorFixture.start(
                [Self.hostPairsProfile("keeper", "iPad11,1")], directory: directory)
            defer { Task { await second.stop(removeState: false) } }
            #expect(await second.udid("keeper") == udid)
            let info = try await second.run("ideviceinfo", ["-u", udid, "-k", "UniqueDeviceID"])
            #expect(info.status == 0 && info.stdout == udid + "\n", "\(info)")
        }
    }
}
