import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HADeployKit
import MobileDevice
import SSHTransport

/// Configured devices and connected ones, side by side, for `hadeploy devices`.
public struct DeviceInventory: Sendable, Encodable {
    public struct Row: Sendable, Encodable {
        /// The devices.yaml name, nil for a connected device the matrix does not know.
        public var id: String?
        public var name: String
        public var udid: String?
        public var transport: String
        /// What will drive it from this host.
        public var backend: String
        public var configured: Bool
        public var connected: Bool
        public var productType: String?
        public var ios: String?
        public var arch: String?
        public var pairing: String?
        public var note: String?
        /// A Wi-Fi device: its address, and how hadeploy found it (mDNS, or its address in devices.yaml).
        public var address: String?
        public var foundBy: String?
    }

    public var rows: [Row]
    public var usbmuxd: String
    public var usbmuxdError: String?
    /// What simctl/devicectl/pymobiledevice3 discovery could not list, and why.
    public var notes: [String] = []
    /// The `build_host:` and the Xcode each flavour finds there, when devices.yaml names one.
    public var buildHost: BuildHostStatus?

    /// `pairRecords`: where hadeploy keeps its own pair records (`hadeploy pair`); Wi-Fi devices are
    /// looked for over multicast DNS for up to `wifiWindow`.
    public static func gather(
        matrix: DeviceMatrix, variables: [String: String], topology: Topology, runner: any ProcessRunner,
        fileSystem: any FileSystem, clock: any WallClock, pairRecords: URL? = nil,
        wifiWindow: Duration = .seconds(4)
    ) async -> DeviceInventory {
        let host = topology.host
        let usbmuxdAddress = topology.localUsbmuxd
        let planner = DeployPlanner(matrix: matrix, variables: variables, topology: topology)
        let apple = await AppleDeviceDiscovery(
            host: host, runner: runner, rosettaSimConfigured: !(variables["ROSETTASIM_CTL"] ?? "").isEmpty,
            scratchDirectory: fileSystem.temporaryDirectory.appendingPathComponent(
                "hadeploy-discovery"), fileSystem: fileSystem
        ).using(developerDirectory: AppleDeviceDiscovery.developerDirectory(variables)).discover()
        var connected: [USBDeviceSummary] = []
        var usbError: String?
        // The address libusbmuxd already reads (this process's environment), so messages name it.
        USBTransport.recordStartingAddress(usbmuxdAddress)
        let folders = [fileSystem.temporaryDirectory.path]
        // Devices on other USB hosts: each host's usbmuxd through its SSH tunnel, for its own devices,
        // muxed into hadeploy's usbmuxd beside this machine's: one list of every route's devices.
        let hosts = await USBHostRoutes.open(matrix: matrix, variables: variables, fileSystem: fileSystem)
        let remoteNotes = hosts.problems
        do {
            try USBTransport.route(to: usbmuxdAddress, others: hosts.others, folders: folders)
            // Wi-Fi devices, which Linux's usbmuxd does not list: hadeploy's own usbmuxd lists every
            // one found over multicast DNS (after one browse), the routes' devices with them.
            if let pairRecords,
                (try? USBTransport.reachOverWiFi(
                    nil, addresses: [:], pairRecords: pairRecords, fileSystem: fileSystem)) != nil
            {
                await USBTransport.waitForWiFiDiscovery(limit: wifiWindow, clock: clock)
            }
            connected = try await USBTransport.devices(clock: clock)
        } catch {
            usbError = "\(error)"
        }
        await hosts.close()
        if !hosts.others.isEmpty { try? USBTransport.route(to: usbmuxdAddress, folders: folders) }
        var rows: [Row] = []
        var matched = Set<String>()
        for device in matrix.devices {
            let udid = device.udid.map { $0.display(variables) }
            // A Wi-Fi-synced device plugged in is listed twice: the entry its lookup uses counts.
            let wanted = device.network ? "Network" : "USB"
            let live = connected.first { $0.udid == udid && $0.connection == wanted }
            let otherEntry = connected.first { $0.udid == udid && $0.connection != wanted }
            if let live { matched.insert(live.udid + live.connection) }
            if live == nil, let otherEntry, USBBackend.takes(device) {
                matched.insert(otherEntry.udid + otherEntry.connection)
            }
            // The same decision the deploy makes (DeployPlanner.backend), in words.
            let (chosen, choice, backend) = planner.backend(device)
            let availability = choice.availability
            var note: String?
            if case .notOnThisHost(let reason) = availability {
                note = "not available on this host (\(reason))"
            }
            if case .failedHere(let reason) = availability { note = reason }
            // The Mac is the machine this runs on: there whenever it is available.
            let thisMac = Backends.word(of: device)?.thisMac == true && availability == .available
            // A usbmuxd lists it (not the Mac, nor an SSH device): not listed, not there.
            if note == nil, Backends.throughUsbmuxd(device), live == nil {
                let unset = device.udid?.resolve(variables).unsetNames ?? []
                note = "not connected" + (unset.isEmpty ? "" : " (\(udid ?? ""))")
            }
            if live == nil, otherEntry != nil, USBBackend.takes(device) {
                note =
                    device.network
                    ? "listed on USB only, not on Wi-Fi: turn on Wi-Fi sync for this computer, or set network: false"
                    : "listed on Wi-Fi only: plug it in, or set network: true"
            }
            if let problem = live?.problem { note = problem }
            // What the backend still needs here (pymobiledevice3 on Linux), in one line.
            if note == nil, live != nil, let udid {
                note = await chosen.readiness(
                    device, udid, choice.usbRoute,
                    BackendHostTools(variables: variables, runner: runner, fileSystem: fileSystem))
            }
            if live == nil,
                let found = apple.devices.first(where: {
                    $0.udid == udid
                        || ($0.kind == .simulator
                            && $0.name == device.simulatorDeviceType && device.kind == .simulator)
                })
            {
                matched.insert(found.udid)
                rows.append(
                    Row(
                        id: device.id, name: device.name, udid: found.udid,
                        transport: device.transport.rawValue,
                        backend: found.backend, configured: true, connected: true,
                        productType: device.productType,
                        ios: found.os, arch: device.arch.rawValue, pairing: nil,
                        note: found.state ?? found.note))
                continue
            }
            rows.append(
                Row(
                    id: device.id, name: device.name, udid: udid, transport: device.transport.rawValue,
                    backend: backend, configured: true, connected: live != nil || thisMac,
                    productType: live?.productType ?? device.productType,
                    ios: live?.productVersion ?? device.iosVersion,
                    arch: live?.cpuArchitecture ?? device.arch.rawValue, pairing: live?.pairing.rawValue,
                    note: note, address: live?.address, foundBy: live?.foundBy))
        }
        for live in connected where !matched.contains(live.udid + live.connection) {
            let wifi = live.connection == "Network"
            rows.append(
                Row(
                    id: nil, name: live.name ?? "(unnamed)", udid: live.udid, transport: "usb",
                    backend: wifi ? "libimobiledevice (usbmuxd, Wi-Fi)" : "libimobiledevice (usbmuxd)",
                    configured: false, connected: true,
                    productType: live.productType, ios: live.productVersion, arch: live.cpuArchitecture,
                    pairing: live.pairing.rawValue,
                    note: live.problem
                        ?? (wifi
                            ? "on Wi-Fi but not in devices.yaml (add it with this udid and network: true)"
                            : "connected but not in devices.yaml (add it with this udid)"),
                    address: live.address, foundBy: live.foundBy))
        }
        return DeviceInventory(
            rows: rows, usbmuxd: usbmuxdAddress ?? "/var/run/usbmuxd", usbmuxdError: usbError,
            notes: apple.notes + remoteNotes)
    }

    public var text: String {
        let header = ["DEVICE", "NAME", "UDID", "IOS", "CONNECTED", "BACKEND", "NOTE"]
        var table = [header]
        for row in rows {
            table.append([
                row.id ?? "-", row.name, row.udid ?? "-", row.ios ?? "-",
                row.address.map { "Wi-Fi \($0)" + (row.foundBy.map { ", \($0)" } ?? "") }
                    ?? (row.connected ? "yes" : "no"),
                row.backend,
                row.note ?? "",
            ])
        }
        let widths = (0..<header.count).map { column in table.map { $0[column].count }.max() ?? 0 }
        var lines = table.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1
                    ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        if let usbmuxdError { lines.append("usbmuxd (\(usbmuxd)): \(usbmuxdError)") }
        lines += notes
        if let buildHost { lines.append(buildHost.text) }
        return lines.joined(separator: "\n")
    }
}

extension DeviceInventory {
    /// What is wrong with a usbmuxd that answers but cannot be used (nil: it works or is not
    /// running), for `hadeploy devices` to fail on a broken host.
    public static func usbmuxdFault() -> String? { USBTransport.usbmuxdFault() }
}
