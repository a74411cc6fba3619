import Foundation
import HADeployCore
import HostCrypto

/// What installd refuses in a build's `embedded.mobileprovision` at "VerifyingApplication", as a real
/// device answers it (`ApplicationVerificationFailed`, the MobileInstallation codes the peer tools
/// print): a profile that does not list this device or was made for another app id (0xe8008015), or
/// that has expired (0xe8008018). A bundle with no profile of its own runs only under one installed on
/// the device before (misagent's) that covers it; with none it is refused as a real device refuses a
/// development build without its profile (0xe8008015). The device keeps the app it had.
enum ProfileVerification {
    static let noValidProfile = 0xE800_8015
    static let identityNoLongerValid = 0xE800_8018

    static func check(
        bundle: URL, bundleID: String, udid: String, installed: [Data], fileSystem: any FileSystem, now: Date
    ) throws {
        let executable =
            "/private/var/installd/Library/Caches/com.apple.mobile.installd.staging/"
            + "extracted/Payload/\(bundle.lastPathComponent)"
        let noProfile = InstallError(
            "ApplicationVerificationFailed",
            "Failed to verify code signature of \(executable) : 0xe8008015 (A valid provisioning profile "
                + "for this executable was not found.)", detail: noValidProfile)
        let file = bundle.appendingPathComponent("embedded.mobileprovision")
        guard fileSystem.fileExists(atPath: file.path) else {
            let covering = installed.contains {
                profile(in: $0)?.problem(udid: udid, bundleID: bundleID, now: now) == nil
            }
            if covering { return }
            throw noProfile
        }
        guard let data = fileSystem.contents(atPath: file.path), let profile = profile(in: data) else {
            throw noProfile
        }
        if let expiry = profile.expirationDate, expiry <= now {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of \(executable) : 0xe8008018 (The identity used to sign the "
                    + "executable is no longer valid.)", detail: identityNoLongerValid)
        }
        if profile.problem(udid: udid, bundleID: bundleID, now: now) != nil { throw noProfile }
    }

    /// The profile a signed `.mobileprovision` carries; nil when it is none (or larger than 1 MiB).
    static func profile(in data: Data) -> ProvisioningProfile? {
        guard data.count <= 1 << 20, let content = try? CMSEnvelope.content(of: data) else { return nil }
        return ProvisioningProfile(plist: content)
    }
}
