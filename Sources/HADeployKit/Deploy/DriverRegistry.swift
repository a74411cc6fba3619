import DeviceSpec
import Foundation
import HADeployCore
import Logging
import MobileDevice
import SSHTransport

/// Picks the driver for each device from its transport and this host.
public struct DriverRegistry: Sendable {
    public var matrix: DeviceMatrix
    public var variables: [String: String]
    public var host: HostPlatform
    /// `USBMUXD_SOCKET_ADDRESS` for USB devices (virtual devices, or a forwarded remote usbmuxd).
    public var usbmuxdAddress: String?
    public var stateDirectory: URL
    public var output: any OutputSink
    /// Developer Disk Image directories to use instead of devices.yaml's (virtual devices).
    public var developerImageOverride: [URL]?
    /// SSH devices whose jailbroken twin runs on this machine (`--virtual`): device id → where it listens.
    var sshTwins: [String: (port: Int, key: String, knownHosts: String)] = [:]
    /// Runs xcrun, rosettasim-ctl and pymobiledevice3.
    public var runner: any ProcessRunner = LiveProcessRunner()

    public init(
        matrix: DeviceMatrix, variables: [String: String], host: HostPlatform, usbmuxdAddress: String?,
        stateDirectory: URL, output: any OutputSink
    ) {
        self.matrix = matrix
        self.variables = variables
        self.host = host
        self.usbmuxdAddress = usbmuxdAddress
        self.stateDirectory = stateDirectory
        self.output = output
    }

    public func driver(for plan: DevicePlan) throws -> any DeviceDriver {
        switch plan.transport {
        case .usb:
            return try usbDriver(plan)
        case .ssh:
            let primary = try sshDriver(plan)
            if plan.fallbackTransport == .usb, let udid = plan.udid, !udid.hasPrefix("<unset") {
                return FallbackDriver(primary: primary, fallback: try usbDriver(plan))
            }
            return primary
        case .simctl:
            return SimctlDriver.make(
                plan: plan, device: matrix.device(id: plan.id), matrix: matrix, variables: variables,
                host: host,
                runner: runner, scratchDirectory: stateDirectory.appendingPathComponent("simctl"))
        case .rosettasim:
            return RosettaSimDriver.make(
                plan: plan, device: matrix.device(id: plan.id), variables: variables, host: host,
                runner: runner,
                scratchDirectory: stateDirectory.appendingPathComponent("rosettasim"))
        case .devicectl:
            if host == .macOS {
                return DevicectlDriver.make(
                    plan: plan, matrix: matrix, variables: variables, host: host, runner: runner,
                    scratchDirectory: stateDirectory.appendingPathComponent("devicectl"))
            }
            return ModernLinuxDriver(
                usb: try usbDriver(plan),
                tunnel: PyMobileDevice3Driver.make(
                    plan: plan, variables: variables, runner: runner,
                    scratchDirectory: stateDirectory.appendingPathComponent("pymobiledevice3")))
        }
    }

    func sshDriver(_ plan: DevicePlan) throws -> any DeviceDriver {
        guard let device = matrix.device(id: plan.id) else {
            throw TransportUnavailable(device: plan.name, transport: "ssh", reason: "not in devices.yaml")
        }
        let knownHosts = SSHLogin.knownHostsPath(variables)
        var config = try SSHDriver.config(
            for: device, plan: plan, variables: variables, knownHosts: knownHosts)
        if let twin = sshTwins[plan.id] {
            config.connection.host = "127.0.0.1"
            config.connection.port = twin.port
            config.connection.authentication = .privateKey(path: twin.key, passphrase: nil)
            config.connection.knownHostsPath = twin.knownHosts
            config.connection.legacyAlgorithms = false
        }
        return SSHDriver(
            deployer: JailbreakDeployer(config: config), plan: plan,
            workDirectory: stateDirectory.appendingPathComponent("ssh"))
    }

    func usbDriver(_ plan: DevicePlan) throws -> any DeviceDriver {
        guard let udid = plan.udid, !udid.hasPrefix("<unset") else {
            throw TransportUnavailable(
                device: plan.name, transport: "usb",
                reason: "no UDID: set it in devices.yaml or .env (`idevice_id -l`)")
        }
        var ddi: [URL] = developerImageOverride ?? []
        if developerImageOverride == nil, let device = matrix.device(id: plan.id),
            let directory = device.ddiDir?.resolve(variables),
            case .value(let path) = directory
        {
            let expanded = path.hasPrefix("~/") ? (variables["HOME"] ?? "~") + path.dropFirst(1) : path
            ddi.append(URL(fileURLWithPath: expanded))
        }
        var timeouts = USBTimeouts()
        if let install = plan.timeouts["install"] { timeouts.install = .milliseconds(Int64(install * 1000)) }
        if let launch = plan.timeouts["launch"] { timeouts.launch = .milliseconds(Int64(launch * 1000)) }
        let options = USBDeviceOptions(
            stateDirectory: stateDirectory.appendingPathComponent("install-records"),
            developerImageDirectories: ddi,
            timeouts: timeouts, logger: Logger(label: "hadeploy.usb"),
            // A crash at launch is also caught by the crash-report step; a short watch keeps redeploys quick.
            launchSettle: .milliseconds(300))
        return USBDriver(
            udid: udid, name: plan.name, options: options,
            connectDeadline: .milliseconds(Int64((plan.timeouts["connect"] ?? 30) * 1000)))
    }
}
