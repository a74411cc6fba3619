import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import MobileDevice
import SSHTransport

/// Every usbmuxd a run talks to, in this process, set up the same way for `deploy` and `status`:
/// this machine's (or the one `USBMUXD_SOCKET_ADDRESS` named when hadeploy started), the twins', and
/// each USB host's forwarded over SSH for the devices it has. The first is the relay's route, the
/// others are muxed in beside it (`USBTransport.route(to:others:)`): libusbmuxd and pymobiledevice3
/// see every route's devices through hadeploy's one usbmuxd, never a change of the environment. A
/// route that cannot be opened fails its own devices only, with why.
public final class RunRoutes: Sendable {
    let tunnels: [UsbmuxForwarder]
    /// Why a route could not be set up: its devices fail (`status` says so per device).
    let failures: [USBRoute: any Error]

    init(tunnels: [UsbmuxForwarder], failures: [USBRoute: any Error]) {
        self.tunnels = tunnels
        self.failures = failures
    }

    /// Opens every route the available devices of `devices` use (in the plan's order); for a USB
    /// host, the SSH tunnel to its usbmuxd, for its devices only (no other UDID passes the tunnel).
    public static func open(
        _ devices: [DevicePlan], login: HostLogin?, environment: [String: String], stateDirectory: URL,
        fileSystem: any FileSystem, message: (String) -> Void
    ) async -> RunRoutes {
        // The relay's socket: in the run's own state folder, never a shared one when it fits.
        try? fileSystem.createDirectory(
            at: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let folders = [stateDirectory.path, fileSystem.temporaryDirectory.path]
        var routes: [USBRoute] = []
        for device in devices where device.availability == .available {
            if let route = device.backend.usbRoute, !routes.contains(route) { routes.append(route) }
        }
        var addresses: [(route: USBRoute, address: String?, udids: Set<String>)] = []
        var tunnels: [UsbmuxForwarder] = []
        var failures: [USBRoute: any Error] = [:]
        for route in routes {
            let udids = devices.filter { $0.backend.usbRoute == route }.compactMap { $0.udid?.value }
            switch route {
            case .local(let address):
                addresses.append((route, address, Set(udids)))
            case .virtual(let address):
                addresses.append((route, address, Set(udids)))
            case .usbHost(let remote):
                message("USB host \(remote): forwarding its usbmuxd over SSH for \(udids.count) device(s)")
                do {
                    let forwarder = try await USBHostTunnel.open(
                        remote, udids: udids, login: login, environment: environment, fileSystem: fileSystem)
                    tunnels.append(forwarder)
                    addresses.append((route, forwarder.socketAddress, Set(udids)))
                } catch {
                    failures[route] = error
                }
            }
        }
        if let first = addresses.first {
            do {
                try USBTransport.route(
                    to: first.address,
                    others: addresses.dropFirst().map { ($0.address ?? "", $0.udids) }, folders: folders)
                try reachWiFiDevices(
                    devices.filter { $0.backend.usbRoute.map(routes.contains) ?? false },
                    virtual: addresses.contains { if case .virtual = $0.route { true } else { false } },
                    environment: environment, stateDirectory: stateDirectory, fileSystem: fileSystem)
            } catch {
                for entry in addresses { failures[entry.route] = error }
            }
        }
        return RunRoutes(tunnels: tunnels, failures: failures)
    }

    /// The devices reached over Wi-Fi (`network: true`): hadeploy's usbmuxd lists them itself once
    /// found over multicast DNS, whatever this machine's usbmuxd lists (Linux's: USB devices only).
    static func reachWiFiDevices(
        _ devices: [DevicePlan], virtual: Bool, environment: [String: String], stateDirectory: URL,
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
        // The twins' run keeps its own records, never in the user's folder.
        let folder =
            virtual
            ? stateDirectory.appendingPathComponent("lockdown")
            : PairRecordLocation.folder(environment: environment, fileSystem: fileSystem)
        try USBTransport.reachOverWiFi(
            Set(udids), addresses: addresses, pairRecords: folder, fileSystem: fileSystem)
    }

    /// Why `device`'s route could not be set up (nil: it was, or the device needs no usbmuxd).
    public func failure(for device: DevicePlan) -> (any Error)? {
        device.backend.usbRoute.flatMap { failures[$0] }
    }

    /// Closes the tunnels.
    public func close() async {
        for tunnel in tunnels { await tunnel.stop() }
    }
}

/// The USB hosts devices.yaml names (`usb_host: ssh://…`), each host's usbmuxd through an SSH tunnel
/// of its own that passes its devices only: the other routes of `hadeploy devices` and `hadeploy
/// muxer`, beside this machine's usbmuxd (a run opens its routes from its plan: `RunRoutes`).
public struct USBHostRoutes: Sendable {
    let tunnels: [UsbmuxForwarder]
    /// Each host's tunnel and the UDIDs it serves, for `USBTransport.route(to:others:)`.
    public let others: [(address: String, udids: Set<String>)]
    /// One line per host that could not be reached, with why.
    public let problems: [String]

    public static func open(
        matrix: DeviceMatrix, variables: [String: String], fileSystem: any FileSystem
    ) async -> USBHostRoutes {
        var hosts: [String: Set<String>] = [:]
        for device in matrix.devices where USBBackend.takes(device) {
            guard let host = device.usbHost?.resolve(variables).value, !host.isEmpty else { continue }
            if let udid = device.udid?.resolve(variables).value, !udid.isEmpty {
                hosts[host, default: []].insert(udid)
            }
        }
        var tunnels: [UsbmuxForwarder] = []
        var others: [(address: String, udids: Set<String>)] = []
        var problems: [String] = []
        for (host, udids) in hosts.sorted(by: { $0.key < $1.key }) {
            do {
                let tunnel = try await USBHostTunnel.open(
                    host, udids: udids.sorted(), login: nil, environment: variables, fileSystem: fileSystem)
                tunnels.append(tunnel)
                others.append((tunnel.socketAddress, udids))
            } catch {
                problems.append("USB host \(host): \(error)")
            }
        }
        return USBHostRoutes(tunnels: tunnels, others: others, problems: problems)
    }

    public func close() async {
        for tunnel in tunnels { await tunnel.stop() }
    }
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
