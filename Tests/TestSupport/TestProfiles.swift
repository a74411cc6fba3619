import Foundation
import HADeployBuild

/// The `embedded.mobileprovision` the tests' own bundles carry: an in-house profile
/// (`ProvisionsAllDevices`) for every app id of the demo team, valid for a year. The twins refuse a
/// build without a profile that covers them, as real devices do; this one covers any twin.
public enum TestProfiles {
    /// Made once per test process (a 2048-bit key is generated for its signature).
    public static let anyDevice: Data = {
        do {
            return try DemoAppBuilder.developmentProfile(bundleID: "*", devices: nil, now: Date())
        } catch {
            fatalError("the tests' provisioning profile could not be made: \(error)")
        }
    }()

    /// Puts the profile into the `.app` folder `app`.
    public static func embed(in app: URL) throws {
        try anyDevice.write(to: app.appendingPathComponent("embedded.mobileprovision"))
    }
}
