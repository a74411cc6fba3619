import Foundation
import HADeployCore

/// A provisioning profile as Apple ships one, made by OpenSSL itself: the profile's plist in a CMS
/// signed-data envelope (`openssl cms -sign -nodetach -outform DER`), signed by a throwaway
/// certificate (devices check Apple's; hadeploy reads only what the profile says).
public enum ProvisioningProfileFixture {
    public struct Options: Sendable {
        public var name = "HADashboard Development"
        public var uuid = UUID().uuidString
        public var team = "HADEPLOYDM"
        public var applicationIdentifier: String
        public var devices: [String]?
        public var allDevices = false
        public var expires = Date().addingTimeInterval(180 * 86_400)

        public init(applicationIdentifier: String, devices: [String]?) {
            self.applicationIdentifier = applicationIdentifier
            self.devices = devices
        }
    }

    /// The DER bytes of `embedded.mobileprovision` for `options`.
    public static func make(_ options: Options) async throws -> Data {
        let directory = try temporaryDirectory("profile")
        defer { try? FileManager.default.removeItem(at: directory) }
        var values: [String: Any] = [
            "Name": options.name, "UUID": options.uuid, "TeamIdentifier": [options.team],
            "ApplicationIdentifierPrefix": [options.team], "ExpirationDate": options.expires,
            "CreationDate": Date().addingTimeInterval(-86_400), "Platform": ["iOS"], "Version": 1,
            "Entitlements": [
                "application-identifier": options.applicationIdentifier,
                "com.apple.developer.team-identifier": options.team, "get-task-allow": true,
            ],
        ]
        if let devices = options.devices { values["ProvisionedDevices"] = devices }
        if options.allDevices { values["ProvisionsAllDevices"] = true }
        let plist = directory.appendingPathComponent("profile.plist")
        try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(
            to: plist)
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let output = directory.appendingPathComponent("embedded.mobileprovision")
        for arguments in [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days",
                "2",
                "-subj", "/CN=iPhone Developer: hadeploy tests",
            ],
            [
                "cms", "-sign", "-nodetach", "-binary", "-outform", "DER", "-in", plist.path, "-signer",
                certificate, "-inkey", key, "-out", output.path,
            ],
        ] {
            let made = try await ToolRun.run("openssl", arguments)
            guard made.status == 0 else {
                throw CocoaError(
                    .fileWriteUnknown,
                    userInfo: [NSLocalizedDescriptionKey: String(decoding: made.standardError, as: UTF8.self)]
                )
            }
        }
        return try Data(contentsOf: output)
    }
}
