import Foundation
import HADeployCore
import Testing

/// What a real iPad refuses in a build's provisioning profile, decided before a byte is sent.
@Suite struct ProvisioningProfileTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let ipad = "00008030-001A2D3E4F500C2E"

    static func profile(
        devices: [String]? = [ipad], expires: Date = now.addingTimeInterval(86_400), all: Bool = false,
        appID: String? = "ABCDE12345.com.hadashboard.app"
    ) -> ProvisioningProfile {
        ProvisioningProfile(
            name: "HADashboard Development", uuid: "7A1B2C3D-0000-4000-8000-123456789ABC",
            teamIdentifiers: ["ABCDE12345"], expirationDate: expires, provisionedDevices: devices,
            provisionsAllDevices: all, applicationIdentifier: appID)
    }

    @Test func aListedDeviceWithAMatchingAppIdAndAValidDateIsTaken() {
        #expect(
            Self.profile().problem(udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now) == nil)
        #expect(
            Self.profile().problem(
                udid: Self.ipad.lowercased(), bundleID: "com.hadashboard.app", now: Self.now)
                == nil, "UDIDs compare without case")
        #expect(
            Self.profile(devices: nil, all: true).problem(
                udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now) == nil,
            "an enterprise profile")
    }

    @Test func anUnlistedDeviceAnExpiredProfileOrAnotherAppIdIsRefusedWithTheFix() throws {
        let unlisted = try #require(
            Self.profile(devices: ["00008020-0000000000000001"]).problem(
                udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now))
        #expect(unlisted.contains("'HADashboard Development' (7A1B2C3D-0000-4000-8000-123456789ABC)"))
        #expect(unlisted.contains("does not list this device (UDID \(Self.ipad))"))
        #expect(unlisted.contains("developer portal"))
        let expired = try #require(
            Self.profile(expires: Self.now.addingTimeInterval(-1)).problem(
                udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now))
        #expect(expired.contains("expired on 2027-01-15"), "\(expired)")
        let other = try #require(
            Self.profile(appID: "ABCDE12345.com.example.other").problem(
                udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now))
        #expect(other.contains("is for the app id ABCDE12345.com.example.other, not com.hadashboard.app"))
        #expect(
            Self.profile(devices: nil).problem(
                udid: Self.ipad, bundleID: "com.hadashboard.app", now: Self.now)
                != nil, "an App Store profile lists no device")
    }

    @Test func appIdsMatchAsAppleMatchesThem() {
        #expect(ProvisioningProfile.matches("TEAM.*", bundleID: "com.hadashboard.app"))
        #expect(ProvisioningProfile.matches("TEAM.com.hadashboard.*", bundleID: "com.hadashboard.app"))
        #expect(!ProvisioningProfile.matches("TEAM.com.other.*", bundleID: "com.hadashboard.app"))
        #expect(ProvisioningProfile.matches("TEAM.com.hadashboard.app", bundleID: "com.hadashboard.app"))
        #expect(!ProvisioningProfile.matches("TEAM.com.hadashboard.app2", bundleID: "com.hadashboard.app"))
        #expect(!ProvisioningProfile.matches("no-team-prefix", bundleID: "no-team-prefix"))
    }

    @Test func onlyHardwareUDIDsAreCheckedAgainstAProfile() {
        #expect(ProvisioningProfile.isHardwareUDID(Self.ipad))
        #expect(ProvisioningProfile.isHardwareUDID(String(repeating: "a1", count: 20)))
        #expect(
            !ProvisioningProfile.isHardwareUDID("5B0A6F3C-8E9D-4B1A-9C2E-7D6F5A4B3C2D"), "a CoreDevice id")
        #expect(!ProvisioningProfile.isHardwareUDID("twin-mini4"))
    }
}
