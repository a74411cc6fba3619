import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import Logging
import MobileDevice
import SSHTransport

/// Makes the driver a device's plan names (`DevicePlan.backend`); decides nothing itself.
public struct DriverRegistry: Sendable {
    public var matrix: DeviceMatrix
    public var variables: [String: String]
    public var host: HostPlatform
    public var stateDirectory: URL
    /// Developer Disk Image directories to use instead of devices.yaml's (virtual devices).
    public var developerImageOverride: [URL]?
    /// SSH devices whose jailbroken twin runs on this machine (`--virtual`): device id → where it listens.
    public var sshTwins: [String: JailbrokenTwinEndpoint] = [:]
    /// Runs xcrun, rosettasim-ctl and pymobiledevice3.
    public var runner: any ProcessRunner

    public init(
        matrix: DeviceMatrix, variables: [String: String], host: HostPlatform, stateDirectory: URL,
        runner: any ProcessRunner
    ) {
        self.matrix = matrix
        self.variables = variables
        self.host = host
        self.stateDirectory = stateDirectory
        self.runner = runner
    }

    public func driver(for plan: DevicePlan) throws -> any DeviceDriver {
        switch plan.backend {
        case .usb:
            return try usbDriver(plan)
        case .ssh(let fallback):
            let primary = try sshDriver(plan)
            if fallback != nil {
                return FallbackDriver(primary: primary, fallback: try usbDriver(plan))
            }
            return primary
        case .simctl:
            return SimctlDriver.make(
                plan: plan, device: matrix.device(id: plan.id), matrix: matrix, variables: variables,
                host: host, runner: runner, scratchDirectory: stateDirectory.appendingPathComponent("simctl"))
        case .rosettaSim:
            return RosettaSimDriver.make(
                plan: plan, device: matrix.device(id: plan.id), variables: variables, host: host,
                runner: runner, scratchDirectory: stateDirectory.appendingPathComponent("rosettasim"))
        case .devicectl:
            return DevicectlDriver.make(
                plan: plan, matrix: matrix, variables: variables, host: host, runner: runner,
                scratchDirectory: stateDirectory.appendingPathComponent("devicectl"))
        case .mac:
            return MacDriver.make(plan: plan, variables: variables, host: host, runner: runner)
        case .pymobiledevice3:
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
        guard let udid = plan.udid?.value else {
            throw TransportUnavailable(
                device: plan.name, transport: "usb",
                reason: "no UDID: set it in devices.yaml or .env (`idevice_id -l`)")
        }
        var ddi: [URL] = developerImageOverride ?? []
        if developerImageOverride == nil, let device = matrix.device(id: plan.id),
            let path = device.ddiDir?.resolve(variables).value
        {
            ddi.append(URL(fileURLWithPath: HomePath.expand(path, variables)))
        }
        // The driver's own limits are the plan's: the install deadline sized to the app, the launch's.
        var timeouts = USBTimeouts()
        if let install = plan.timeouts["install"] { timeouts.install = .checkedSeconds(install) }
        if let launch = plan.step(.launch) { timeouts.launch = launch.deadline.duration(appBytes: 0) }
        let options = USBDeviceOptions(
            fileSystem: LiveFileSystem(), clock: LiveClock(),
            stateDirectory: stateDirectory.appendingPathComponent("install-records"),
            developerImageDirectories: ddi,
            timeouts: timeouts, logger: Logger(label: "hadeploy.usb"),
            // A crash at launch is also caught by the crash-report step; a short watch keeps redeploys quick.
            launchSettle: .milliseconds(300), network: plan.backend.lookup == .network)
        return USBDriver(
            udid: udid, name: plan.name, options: options,
            connectDeadline: (plan.step(.connect)?.deadline ?? .seconds(30)).duration(appBytes: 0))
    }
}
