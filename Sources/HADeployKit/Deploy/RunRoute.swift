import DeployModel
import Foundation
import HADeployCore
import MobileDevice
import SSHTransport

/// The usbmuxd a run talks to in this process, set up the same way for `deploy` and `status`:
/// this machine's (or the one `USBMUXD_SOCKET_ADDRESS` named when hadeploy started), the twins', or a
/// USB host's forwarded over SSH for the devices it has — a value of the process's usbmuxd relay
/// (`USBTransport.route(to:)`), never a change of the environment. One route per run and process:
/// the devices of every other route run in workers (`DeployPlan.workers`), or are told to (`status`).
public final class RunRoute: Sendable {
    /// The route served here (nil: no device of this run goes through a usbmuxd).
    public let route: USBRoute?
    let tunnel: UsbmuxForwarder?
    /// Why the route could not be set up (`status` says so per device instead of failing).
    public let failure: (any Error)?

    init(route: USBRoute?, tunnel: UsbmuxForwarder?, failure: (any Error)? = nil) {
        self.route = route
        self.tunnel = tunnel
        self.failure = failure
    }

    /// A route that could not be opened: every device through a usbmuxd is told why.
    public static func unavailable(_ error: any Error) -> RunRoute {
        RunRoute(route: nil, tunnel: nil, failure: error)
    }

    /// The route of the first available device that is not another process's (`delegated`).
    public static func here(_ devices: [DevicePlan], delegated: Set<String> = []) -> USBRoute? {
        devices.first {
            $0.availability == .available && !delegated.contains($0.id) && $0.backend.usbRoute != nil
        }?.backend.usbRoute
    }

    /// Points this process at `route`; for a USB host, opens the SSH tunnel to its usbmuxd, for the
    /// devices of `devices` it serves (no other UDID passes the tunnel).
    public static func open(
        _ route: USBRoute?, devices: [DevicePlan], login: HostLogin?, environment: [String: String],
        stateDirectory: URL, fileSystem: any FileSystem, message: (String) -> Void
    ) async throws -> RunRoute {
        // The relay's socket: in the run's own state folder, never a shared one when it fits.
        try? fileSystem.createDirectory(
            at: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let folders = [stateDirectory.path, fileSystem.temporaryDirectory.path]
        switch route {
        case .local(let address)?:
            try USBTransport.route(to: address, folders: folders)
        case .virtual(let address)?:
            try USBTransport.route(to: address, folders: folders)
        case .usbHost(let remote)?:
            let udids = devices.filter { $0.backend.usbRoute == route }.compactMap { $0.udid?.value }
            message("USB host \(remote): forwarding its usbmuxd over SSH for \(udids.count) device(s)")
            let forwarder = try await USBHostTunnel.open(
                remote, udids: udids, login: login, environment: environment, fileSystem: fileSystem)
            do {
                try USBTransport.route(to: forwarder.socketAddress, folders: folders)
            } catch {
                await forwarder.stop()
                throw error
            }
            return RunRoute(route: route, tunnel: forwarder)
        case nil:
            break
        }
        try reachWiFiDevices(
            devices.filter { $0.backend.usbRoute == route }, route: route, environment: environment,
            stateDirectory: stateDirectory, fileSystem: fileSystem)
        return RunRoute(route: route, tunnel: nil)
    }

    /// The devices reached over Wi-Fi (`network: true`): hadeploy's usbmuxd lists them itself once
    /// found over multicast DNS, whatever this machine's usbmuxd lists (Linux's: USB devices only).
    static func reachWiFiDevices(
        _ devices: [DevicePlan], route: USBRoute?, environment: [String: String], stateDirectory: URL,
        fileSystem: any FileSystem
    ) throws {
        let wifi = devices.filter { $0.backend.lookup == .network }
        let udids = wifi.compactMap { $0.udid?.value }
        guard !udids.isEmpty else { return }
        var addresses: [String: String] = [:]
        for device in wifi {
            if let udid = device.udid?.value, let address = device.backend.address {
                addresses[udid] = address
            }
        }
        let folder: URL
        if case .virtual? = route {
            // The twins' run keeps its own records, never in the user's folder.
            folder = stateDirectory.appendingPathComponent("lockdown")
        } else {
            folder = PairRecordLocation.folder(environment: environment, fileSystem: fileSystem)
        }
        try USBTransport.reachOverWiFi(
            Set(udids), addresses: addresses, pairRecords: folder, fileSystem: fileSystem)
    }

    /// Whether `device` is reached through this process's usbmuxd (or needs none).
    public func serves(_ device: DevicePlan) -> Bool {
        guard let wanted = device.backend.usbRoute else { return true }
        return wanted == route
    }

    /// Closes the tunnel, if any.
    public func close() async { await tunnel?.stop() }
}

/// Where hadeploy keeps the pair records it makes (`hadeploy pair`) and reads for Wi-Fi devices: the
/// user's own data folder, owner-only (`$XDG_DATA_HOME/hadeploy/lockdown`, else
/// `~/.local/share/hadeploy/lockdown`; `~/Library/Application Support/hadeploy/lockdown` on macOS).
public enum PairRecordLocation {
    public static func folder(environment: [String: String], fileSystem: any FileSystem) -> URL {
        if let override = environment["HADEPLOY_PAIR_RECORDS"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        let home =
            environment["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? fileSystem.homeDirectory
        if HostPlatform.current == .macOS {
            return home.appendingPathComponent("Library/Application Support/hadeploy/lockdown")
        }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data).appendingPathComponent("hadeploy/lockdown")
        }
        return home.appendingPathComponent(".local/share/hadeploy/lockdown")
    }
}
