import Foundation
import HADeployCore

/// Everything ``VirtualHADashboardApp/run(_:screen:)`` needs to act as one launch of the real app:
/// the process's arguments, where its data container and preferences are, and what the device says
/// about itself (`UIDevice` name, model, systemVersion; `hw.machine`).
public struct VirtualHADashboardLaunch: Sendable {
    public var bundleIdentifier: String
    public var displayName: String
    /// CFBundleShortVersionString and CFBundleVersion.
    public var version: String
    public var build: String
    /// argv without argv[0]: `-HAServerURL http://… -HADashboard lobby …` (may be empty).
    public var arguments: [String]
    /// The data container: `Documents/ha-log.txt` is written under it.
    public var dataContainer: URL
    /// `Library/Preferences/<bundle id>.plist` (in the container unless the app lives in
    /// /Applications on a jailbroken device, where it is /var/mobile/Library/Preferences/…).
    public var preferences: URL
    /// Where the keychain items are kept (outside the container, like a real keychain).
    public var keychain: URL
    /// `UIDevice.name` ("Kitchen iPad"): the mobile_app `device_name`.
    public var deviceName: String
    /// `UIDevice.model` ("iPad", "iPhone").
    public var model: String
    /// `hw.machine` ("iPad2,1").
    public var machine: String
    public var systemVersion: String
    public var options: VirtualHADashboardOptions
    /// Where the container, preferences and keychain are read and written.
    public var fileSystem: any FileSystem

    public init(
        bundleIdentifier: String, displayName: String = "HA Dashboard", version: String, build: String,
        arguments: [String], dataContainer: URL, preferences: URL? = nil, keychain: URL? = nil,
        deviceName: String, model: String, machine: String, systemVersion: String,
        options: VirtualHADashboardOptions = VirtualHADashboardOptions(),
        fileSystem: any FileSystem
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.displayName = displayName
        self.version = version
        self.build = build
        self.arguments = arguments
        self.dataContainer = dataContainer
        self.preferences =
            preferences
            ?? dataContainer.appendingPathComponent("Library/Preferences/\(bundleIdentifier).plist")
        self.keychain =
            keychain
            ?? dataContainer.deletingLastPathComponent().appendingPathComponent(
                dataContainer.lastPathComponent + ".keychain.plist")
        self.deviceName = deviceName
        self.model = model
        self.machine = machine
        self.systemVersion = systemVersion
        self.options = options
        self.fileSystem = fileSystem
    }
}
