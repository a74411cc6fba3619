import DeployModel
import DeviceSpec
import HADeployCore

/// What a backend plans from: the matrix, `.env` merged with the environment, this host and its
/// twins, and where the run keeps its files. Pure: no files, processes or clock.
public struct BackendPlanning: Sendable {
    public var matrix: DeviceMatrix
    public var variables: [String: String]
    public var topology: Topology
    public var paths: HostPaths

    public init(matrix: DeviceMatrix, variables: [String: String], topology: Topology, paths: HostPaths) {
        self.matrix = matrix
        self.variables = variables
        self.topology = topology
        self.paths = paths
    }

    public var host: HostPlatform { topology.host }
    var twins: VirtualTwins? { topology.virtual }
    var state: String { paths.stateDirectory }
    var home: String { nonEmpty(variables["HOME"]) ?? paths.home }

    func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// The usbmuxd a real device is reached through: its `usb_host:`, else this machine's.
    func route(_ device: Device) -> USBRoute {
        let usbHost = device.usbHost.flatMap { nonEmpty($0.resolve(variables).value) }
        return usbHost.map { USBRoute.usbHost($0) } ?? .local(address: topology.localUsbmuxd)
    }

    func lookup(_ device: Device) -> USBLookup { device.network ? .network : .usb }

    /// The device's twin's UDID under `--virtual` (nil: none, or not a virtual run).
    func twinUDID(_ device: Device) -> String? { twins?.udids[device.id] }

    /// libimobiledevice's settings for a device: its Developer Disk Images and install records.
    func usb(_ device: Device, udid: String?, lookup: USBLookup) -> USBBackend.Configuration {
        var images = paths.developerImages ?? []
        if paths.developerImages == nil {
            if let path = device.ddiDir?.resolve(variables).value {
                images.append(HomePath.expand(path, variables))
            }
            if host == .macOS {
                images += xcodeDeviceSupport(device).filter { !images.contains($0) }
            }
        }
        return USBBackend.Configuration(
            udid: udid, developerImages: images, installRecords: state + "/install-records",
            network: lookup == .network)
    }

    /// A simulator's settings (simctl and rosettasim-ctl).
    func simulator(_ device: Device, udid: String?, tool: String?, scratch: String) -> SimulatorConfiguration
    {
        SimulatorConfiguration(
            udid: nonEmpty(udid),
            // `${SIM_IPAD_NAME:-iPad (10th generation)}`: the old scripts' .env key, or the default.
            deviceType: device.simulatorDeviceType.map { ConfigValue($0).display(variables) },
            runtime: device.simulatorRuntime ?? "iOS \(device.iosVersion)",
            developerDir: developerDir(device.flavour), tool: tool, home: home,
            scratchDirectory: state + "/" + scratch)
    }

    /// On a Mac, where the Developer Disk Images are: inside each Xcode
    /// (`<Xcode>/Contents/Developer/Platforms/iPhoneOS.platform/DeviceSupport/<version>/`), the device's
    /// flavour's Xcode first, then the other flavours' and the default Xcode. The usual `ddi_dir`,
    /// `~/Library/Developer/Xcode/iOS DeviceSupport`, holds per-device symbol caches, not images.
    func xcodeDeviceSupport(_ device: Device) -> [String] {
        let developers =
            [developerDir(device.flavour)] + matrix.flavours.map { developerDir($0.name) }
            + ["/Applications/Xcode.app/Contents/Developer"]
        var seen = Set<String>()
        return developers.compactMap { $0 }.map { $0 + "/Platforms/iPhoneOS.platform/DeviceSupport" }
            .filter { seen.insert($0).inserted }
    }

    /// `<xcode>/Contents/Developer` for the flavour's Xcode, when it resolves.
    func developerDir(_ flavour: String) -> String? {
        guard let xcode = matrix.flavour(named: flavour)?.xcode,
            let path = nonEmpty(xcode.resolve(variables).value)
        else { return nil }
        let expanded = HomePath.expand(path, variables)
        return expanded.hasSuffix("/Contents/Developer") ? expanded : expanded + "/Contents/Developer"
    }
}
