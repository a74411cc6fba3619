import Foundation
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    @Suite("profiles: presets, decoding, faults from the start")
    struct ProfileTests {
        @Test("presets cover the matrix with real build numbers; unknown models give nil")
        func presets() throws {
            let ipad2 = try #require(VirtualDeviceProfile.preset(productType: "iPad2,1", iOSVersion: nil))
            #expect(
                ipad2.productVersion == "9.3.5" && ipad2.buildVersion == "13G36"
                    && ipad2.cpuArchitecture == "armv7")
            let iphone = try #require(
                VirtualDeviceProfile.preset(productType: "iPhone17,2", iOSVersion: "18.x"))
            #expect(iphone.productVersion.hasPrefix("18.") && !iphone.buildVersion.isEmpty)
            #expect(
                VirtualDeviceProfile.preset(productType: "iPad11,1", iOSVersion: nil)?.productVersion
                    == "26.0")
            #expect(
                VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: "15.8")?.buildVersion
                    == "19H370")
            #expect(VirtualDeviceProfile.preset(productType: "Watch7,1", iOSVersion: nil) == nil)
            #expect(ipad2.effectiveScreenshotFormat == .png, "PNG from iOS 9 (TIFF only up to iOS 8)")
        }

        @Test("a profile file needs only name and productType; faults decode from JSON")
        func decoding() throws {
            let json = Data(
                #"""
                {"name": "lobby", "productType": "iPad2,1", "pairing": "hostPairs",
                 "faults": [{"throttle": {"bytesPerSecond": 35000000}}, {"passcodeLocked": {}},
                            {"stall": {"at": "lockdown"}}]}
                """#.utf8)
            let profile = try JSONDecoder().decode(VirtualDeviceProfile.self, from: json)
            #expect(
                profile.name == "lobby" && profile.productVersion == "9.3.5"
                    && profile.hardwareModel == "K93AP")
            #expect(profile.pairing == .hostPairs)
            #expect(
                profile.faults == [
                    .throttle(bytesPerSecond: 35_000_000), .passcodeLocked, .stall(at: .lockdown),
                ])
            let roundTrip = try JSONDecoder().decode(
                VirtualDeviceProfile.self, from: JSONEncoder().encode(profile))
            #expect(roundTrip == profile)
        }

        @Test("faults listed in the profile are active from the start")
        func faultsFromProfile() async throws {
            var profile = Profiles.ipadMini4
            profile.faults = [.passcodeLocked]
            let emulator = try await EmulatorFixture.start([profile])
            defer { Task { await emulator.stop() } }
            let udid = await emulator.udid("mini4")
            let info = try await emulator.run("ideviceinfo", ["-u", udid, "-k", "PasswordProtected"])
            #expect(info.stdout == "true\n", "\(info)")
        }
    }
}
