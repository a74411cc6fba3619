import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers
import MobileDevice

/// A device or simulator this host can see, as `hadeploy init` reports it.
public struct SeenDevice: Sendable, Hashable, Encodable {
    /// The identifier the backend takes (a UDID, or devicectl's identifier).
    public var udid: String
    public var name: String
    public var productType: String?
    /// `iOS 15.8`, when known.
    public var os: String?
    /// `USB`, `Wi-Fi`, `devicectl`, `pymobiledevice3`, `simctl` or `rosettasim`.
    public var source: String
}

/// Lists what this host can reach: usbmuxd's devices (USB and Wi-Fi), and on macOS simulators and
/// devicectl devices (pymobiledevice3's on Linux). A source that cannot be listed becomes a note.
public struct HostDeviceScan: Sendable {
    public var host: HostPlatform
    public var runner: any ProcessRunner
    public var rosettaSimConfigured: Bool
    public var timeout: Duration
    /// Where discovery's scratch files go (`hadeploy-init` in it).
    public var temporaryDirectory: URL
    public var fileSystem: any FileSystem
    /// The Xcode simctl and devicectl run from (`AppleDeviceDiscovery.developerDirectory`); nil:
    /// `xcode-select`'s.
    public var developerDirectory: String?
    /// Times the usbmuxd devices' lockdown exchanges.
    public var clock: any WallClock
    /// `USBMUXD_SOCKET_ADDRESS` of this process's environment (nil: the system usbmuxd), for messages.
    public var usbmuxdAddress: String?

    /// `XCODE_MODERN`'s developer folder, when set (`AppleDeviceDiscovery.developerDirectory`).
    public static func developerDirectory(_ variables: [String: String]) -> String? {
        AppleDeviceDiscovery.developerDirectory(variables)
    }

    public init(
        host: HostPlatform, runner: any ProcessRunner, rosettaSimConfigured: Bool, temporaryDirectory: URL,
        fileSystem: any FileSystem, clock: any WallClock, timeout: Duration = .seconds(15)
    ) {
        self.clock = clock
        self.temporaryDirectory = temporaryDirectory
        self.fileSystem = fileSystem
        self.host = host
        self.runner = runner
        self.rosettaSimConfigured = rosettaSimConfigured
        self.timeout = timeout
    }

    public func scan() async -> (devices: [SeenDevice], notes: [String]) {
        var devices: [SeenDevice] = []
        var notes: [String] = []
        USBTransport.recordStartingAddress(usbmuxdAddress)
        do {
            for device in try await USBTransport.devices(clock: clock) {
                devices.append(
                    SeenDevice(
                        udid: device.udid, name: device.name ?? device.productType ?? "iOS device",
                        productType: device.productType, os: device.productVersion.map { "iOS \($0)" },
                        source: device.connection == "Network" ? "Wi-Fi" : "USB"))
            }
        } catch {
            notes.append("usbmuxd: \(error)")
        }
        let apple = await AppleDeviceDiscovery(
            host: host, runner: runner, rosettaSimConfigured: rosettaSimConfigured,
            scratchDirectory: temporaryDirectory.appendingPathComponent("hadeploy-init"),
            fileSystem: fileSystem,
            timeout: timeout
        ).using(developerDirectory: developerDirectory).discover()
        notes += apple.notes
        for found in apple.devices where !devices.contains(where: { $0.udid == found.udid }) {
            devices.append(
                SeenDevice(
                    udid: found.udid, name: found.name, productType: nil, os: found.os, source: found.backend)
            )
        }
        return (devices, notes)
    }
}
