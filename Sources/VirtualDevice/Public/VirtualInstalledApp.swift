/// An app installed on a virtual device.
public struct VirtualInstalledApp: Sendable, Codable, Equatable {
    public let bundleIdentifier: String
    public let displayName: String
    public let bundleVersion: String
    public let shortVersion: String?
    public let executable: String
    /// Slices found in the executable (e.g. ["armv7", "arm64"]).
    public let architectures: [String]
    /// Device-side bundle path (`/private/var/containers/Bundle/Application/<UUID>/X.app`).
    public let path: String
    /// Device-side data container path.
    public let container: String
    public let staticDiskUsage: Int
    /// "ipa" or "developer" (an `.app` directory pushed with PackageType Developer).
    public let packageType: String
}
