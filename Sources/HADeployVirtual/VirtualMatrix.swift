import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import Logging
import VirtualDevice

/// The virtual twins of the matrix's devices: one emulated device per device a virtual device can
/// stand for (real hardware reached over USB, SSH or devicectl), all behind one virtual usbmuxd.
public struct VirtualMatrix: Sendable {
    public struct Twin: Sendable {
        public var device: Device
        public var profile: VirtualDeviceProfile
    }

    public var twins: [Twin]
    /// Devices that have no virtual twin, with why.
    public var skipped: [(device: Device, reason: String)]

    public init(matrix: DeviceMatrix, devices: [Device], variables: [String: String]) {
        var twins: [Twin] = []
        var skipped: [(Device, String)] = []
        for device in devices {
            // `hadeploy virtual` gives a jailbroken device (the iPad 2 plugged in here) a usbmuxd twin too;
            // a --virtual run gives it its jailbroken twin instead (VirtualTwinsRun).
            guard Backends.twin(for: device) != nil else {
                skipped.append(
                    (
                        device,
                        device.kind == .simulator
                            ? "a simulator has no virtual twin (simulators need macOS)"
                            : Backends.word(of: device)?.thisMac == true
                                ? "the Mac has no virtual twin (the Mac Catalyst app runs on a macOS host)"
                                : "no virtual twin for transport \(device.transport)"
                    ))
                continue
            }
            guard let productType = device.productType,
                var profile = VirtualDeviceProfile.preset(
                    productType: productType, iOSVersion: device.iosVersion)
            else {
                skipped.append(
                    (
                        device,
                        "no virtual model for product type \(device.productType ?? "(none)") — known: "
                            + VirtualDeviceProfile.knownProductTypes.joined(separator: ", ")
                    ))
                continue
            }
            profile.name = device.id
            profile.deviceName = device.name
            // A device that waits for ha_dashboard_loaded runs an app build that fires it.
            profile.appSendsLoadedEvent = device.loadedEvent
            // A Wi-Fi device's twin is on the (loopback) network only, reached by the network lookup.
            if device.network { profile.connection = .network }
            if case .value(let udid)? = device.udid?.resolve(variables), !udid.isEmpty { profile.udid = udid }
            twins.append(Twin(device: device, profile: profile))
        }
        self.twins = twins
        self.skipped = skipped
    }

    /// `--wifi-only`: every device reached through usbmuxd (USB, or devicectl's iOS 17+ devices that
    /// Linux reaches through pymobiledevice3) is a Wi-Fi device, as `network: true` makes it.
    public static func wifiOnly(_ matrix: DeviceMatrix) -> DeviceMatrix {
        var matrix = matrix
        for index in matrix.devices.indices
        where Backends.word(of: matrix.devices[index])?.wifi == true && matrix.devices[index].usbHost == nil {
            matrix.devices[index].network = true
        }
        return matrix
    }

    /// Starts the virtual usbmuxd; returns it with the `USBMUXD_SOCKET_ADDRESS` clients must use.
    /// `wifiOnly`: it lists no Network entry, and the network twins announce themselves over mDNS.
    public func start(
        stateDirectory: URL, address: VirtualUsbmuxdAddress? = nil, logger: Logger,
        fileSystem: any FileSystem,
        wifiOnly: Bool = false
    ) async throws -> (VirtualUsbmuxd, String) {
        // A Unix socket's path has room for 103 bytes on macOS (107 on Linux): a long --state is said
        // as such, not as NIO's `unixDomainSocketPathTooLong`.
        let longest = stateDirectory.appendingPathComponent("control.sock").path.utf8.count
        if longest > 103 {
            throw TransportUnavailable(
                device: "virtual devices", transport: "usbmuxd",
                reason: "the state folder \(stateDirectory.path) is too long for the twins' sockets "
                    + "(\(longest) bytes with the socket's name; at most 103): give a shorter --state")
        }
        try fileSystem.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        let socket = address ?? .unixSocket(stateDirectory.appendingPathComponent("usbmuxd.sock").path)
        let usbmuxd = try VirtualUsbmuxd(
            profiles: twins.map(\.profile), stateDirectory: stateDirectory, address: socket, logger: logger,
            fileSystem: fileSystem, wifiOnly: wifiOnly)
        let value = try await usbmuxd.start()
        return (usbmuxd, value)
    }
}

/// Where the virtual usbmuxd listens (a Unix socket or a loopback TCP port), for the CLI that
/// starts the twins without importing the emulator.
public typealias VirtualTwinsAddress = VirtualUsbmuxdAddress
