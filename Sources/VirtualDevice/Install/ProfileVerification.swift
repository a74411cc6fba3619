import Foundation
import HADeployCore
import HostCrypto

/// What installd refuses in a build's `embedded.mobileprovision` at "VerifyingApplication", as a real
/// device answers it (`ApplicationVerificationFailed`, the MobileInstallation codes the peer tools
/// print): a profile that does not list this device or was made for another app id (0xe8008015), or
/// that has expired (0xe8008018). The device keeps the app it had. A bundle with no profile is taken
/// (the twins' demo and test apps carry none).
enum ProfileVerification {
    static let noValidProfile = 0xE800_8015
    static let identityNoLongerValid = 0xE800_8018

    static func check(bundle: URL, bundleID: String, udid: String, fileSystem: any FileSystem, now: Date)
        throws
    {
        let file = bundle.appendingPathComponent("embedded.mobileprovision")
        guard fileSystem.fileExists(atPath: file.path) else { return }
        let executable =
            "/private/var/installd/Library/Caches/com.apple.mobile.installd.staging/"
            + "extracted/Payload/\(bundle.lastPathComponent)"
        guard let data = fileSystem.contents(atPath: file.path), data.count <= 1 << 20,
            let content = try? CMSEnvelope.content(of: data),
            let profile = ProvisioningProfile(plist: content)
        else {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of \(executable) : 0xe8008015 (A valid provisioning profile "
                    + "for this executable was not found.)", detail: noValidProfile)
        }
        if let expiry = profile.expirationDate, expiry <= now {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of \(executable) : 0xe8008018 (The identity used to sign the "
                    + "executable is no longer valid.)", detail: identityNoLongerValid)
        }
        if profile.problem(udid: udid, bundleID: bundleID, now: now) != nil {
            throw InstallError(
                "ApplicationVerificationFailed",
                "Failed to verify code signature of \(executable) : 0xe8008015 (A valid provisioning profile "
                    + "for this executable was not found.)", detail: noValidProfile)
        }
    }
}
