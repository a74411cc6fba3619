import Foundation
import HADeployCore
import Logging

/// How a `USBDevice` behaves: where it keeps state, where Developer Disk Images are, deadlines.
public struct USBDeviceOptions: Sendable {
    /// Install records (`<stateDirectory>/<UDID>/<bundle id>.json`) used to skip unchanged redeploys.
    public var stateDirectory: URL
    /// Xcode DeviceSupport-style directories searched for Developer Disk Images (devices.yaml `ddi_dir`).
    public var developerImageDirectories: [URL]
    public var timeouts: USBTimeouts
    public var logger: Logger
    /// How long a launch watches the app before detaching: a crash at launch shows up here.
    public var launchSettle: Duration
    /// Device and host clocks differ a little; crash reports this much older than the launch still count.
    public var crashClockTolerance: Duration
    /// Reach the device through usbmuxd's network lookup (a Wi-Fi-synced device, `ideviceinstaller
    /// -n`): libimobiledevice then connects straight to the address usbmuxd lists for it.
    public var network: Bool
    /// Where install records, crash reports and unpacked artifacts are read and written.
    public var fileSystem: any FileSystem
    /// When an install or a launch happened.
    public var clock: any WallClock
    /// A launch or screenshot the device refuses for want of the Developer Disk Image mounts it and
    /// tries again (PROTOCOL.md §6.2). Off, it stops and says the image is not mounted: for a caller
    /// that mounts in a step of its own (hadeploy's plan), so nothing is mounted under another
    /// step's deadline.
    public var mountsDeveloperImageOnDemand = true
    /// An upload the connection dropped is cleaned up and tried once more, on a new connection. Off,
    /// the transient error ends the install: for a caller whose own plan retries the step after
    /// re-probing the device (hadeploy's), so an install is tried as often as the plan says.
    public var retriesInterruptedUpload = true

    public init(
        fileSystem: any FileSystem, clock: any WallClock, stateDirectory: URL,
        developerImageDirectories: [URL] = [], timeouts: USBTimeouts = USBTimeouts(),
        logger: Logger = Logger(label: "hadeploy.usb"), launchSettle: Duration = .seconds(1),
        crashClockTolerance: Duration = .seconds(2), network: Bool = false
    ) {
        self.network = network
        self.fileSystem = fileSystem
        self.clock = clock
        self.stateDirectory = stateDirectory
        self.developerImageDirectories = developerImageDirectories
        self.timeouts = timeouts
        self.logger = logger
        self.launchSettle = launchSettle
        self.crashClockTolerance = crashClockTolerance
    }
}
