/// One simulator as `simctl list -j devices` describes it.
public struct SimulatorDevice: Sendable, Hashable, Codable {
    public var udid: String
    public var name: String
    /// `Booted`, `Shutdown`, `Booting`, `Shutting Down`, `Creating`.
    public var state: String
    public var isAvailable: Bool
    /// Why the simulator is unusable (a missing runtime...), when simctl says so.
    public var availabilityError: String?
    /// `com.apple.CoreSimulator.SimRuntime.iOS-17-5` (or `iOS 12.1` from Xcodes before 10.1).
    public var runtimeIdentifier: String
    /// `iOS`, `tvOS`, `watchOS`, `xrOS`.
    public var platform: String
    /// `17.5`.
    public var version: String
    /// `com.apple.CoreSimulator.SimDeviceType.iPad-10th-generation`; absent from old Xcodes.
    public var deviceTypeIdentifier: String?

    /// `iOS 17.5`.
    public var runtimeName: String { "\(platform) \(version)" }
    public var isBooted: Bool { state == "Booted" }
    public var majorVersion: Int { Int(version.split(separator: ".").first ?? "") ?? 0 }

    /// The device type's short name, `iPad-10th-generation`.
    public var deviceType: String? {
        deviceTypeIdentifier.map { String($0.split(separator: ".").last ?? Substring($0)) }
    }

    /// x86_64 runtimes up to iOS 14 hang in `simctl install/launch` on Apple silicon: rosettasim-ctl drives them.
    public var needsRosettaSim: Bool { platform == "iOS" && majorVersion > 0 && majorVersion <= 14 }
}
