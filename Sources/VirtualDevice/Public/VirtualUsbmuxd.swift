import Foundation
import HADeployCore
import Logging
import MulticastDNS
import NIOCore
import NIOPosix

/// A virtual usbmuxd with emulated iOS devices behind it.
///
/// Point libimobiledevice clients at it with `USBMUXD_SOCKET_ADDRESS=<value returned by start()>`.
/// Device state (pair records, installed apps, mounted image, crash logs) lives under
/// `stateDirectory` and survives restarts.
public actor VirtualUsbmuxd {
    public let stateDirectory: URL
    public let address: VirtualUsbmuxdAddress
    nonisolated let logger: Logger
    nonisolated let pairRecords: PairRecordStore
    /// Every file the emulator reads or writes (state, pair records, uploads, app containers).
    nonisolated let fileSystem: any FileSystem

    private let profiles: [VirtualDeviceProfile]
    private let behaviour: any VirtualAppBehaviour
    private var runtimes: [DeviceRuntime] = []
    /// udid → DeviceID of the USB entry while attached (a rebooting device is absent).
    private var attachments: [String: Int] = [:]
    /// udid → DeviceID of the Network entry while on the network.
    private var networkAttachments: [String: Int] = [:]
    private var nextDeviceID = 1
    private var listeners: [ObjectIdentifier: ByteStream] = [:]
    private var serverChannel: Channel?
    private var socketFile: SocketFile?
    private var control: ControlServer?
    private var clientAddress: String?
    private var rebootTasks: [String: Task<Void, Never>] = [:]
    /// Wi-Fi only (`hadeploy virtual --wifi-only`): this usbmuxd lists no Network entry — Linux's
    /// usbmuxd lists USB devices only — and each network twin announces itself over multicast DNS
    /// instead, as an iOS device does for Wi-Fi sync.
    public let wifiOnly: Bool
    /// With `wifiOnly`: false stands for a network that does not pass multicast DNS (another subnet, a
    /// guest network): the twins are reachable at their addresses and announced nowhere.
    public let announces: Bool
    private var responder: MDNSResponder?

    /// How long a rebooting device stays detached.
    private var rebootDuration: Duration = .seconds(2)

    /// Sets how long a rebooting device stays detached (default 2 s).
    public func setRebootDuration(_ duration: Duration) {
        rebootDuration = duration
    }

    /// What usbmuxd knows about an attached device.
    struct AttachedDevice: Sendable, Equatable {
        let deviceID: Int
        let udid: String
        let isPad: Bool
        let locationID: Int
        /// Where a Network entry's device listens; nil for a USB entry.
        let networkAddress: String?
        let wifiAddress: String
    }

    /// Where `Connect` leads.
    enum ConnectTarget {
        case noDevice
        case refused
        case stalled(DeviceRuntime)
        case lockdown(DeviceRuntime)
        case service(DeviceRuntime, ServiceKind)
    }

    /// - Parameters:
    ///   - profiles: one per device; names must be unique.
    ///   - appBehaviour: what launched apps do (default: the HA Dashboard app).
    ///   - fileSystem: where the state directory lives (the caller's context's).
    public init(
        profiles: [VirtualDeviceProfile], stateDirectory: URL, address: VirtualUsbmuxdAddress,
        logger: Logger, appBehaviour: any VirtualAppBehaviour = HADashboardAppBehaviour(),
        fileSystem: any FileSystem, wifiOnly: Bool = false, announces: Bool = true
    ) throws {
        self.wifiOnly = wifiOnly
        self.announces = announces
        self.profiles = profiles
        self.stateDirectory = stateDirectory
        self.address = address
        self.logger = logger
        self.behaviour = appBehaviour
        self.fileSystem = fileSystem
        self.pairRecords = try PairRecordStore(
            directory: stateDirectory.appendingPathComponent("usbmuxd"), fileSystem: fileSystem)
    }

    /// Loads the devices, binds the socket and the control socket (`<state>/control.sock`).
    /// Returns the `USBMUXD_SOCKET_ADDRESS` value for clients (`UNIX:/path` or `127.0.0.1:port`).
    public func start() async throws -> String {
        if let clientAddress { return clientAddress }
        var names = Set<String>()
        for profile in profiles where !names.insert(profile.name).inserted {
            throw VirtualDeviceError.invalidConfiguration("two devices are named \"\(profile.name)\"")
        }
        var loaded: [DeviceRuntime] = []
        for profile in profiles {
            do {
                // Key generation and certificates are CPU-bound: keep them off the concurrency pool.
                let (stateDirectory, pairRecords, behaviour, logger) = (
                    self.stateDirectory, self.pairRecords, self.behaviour, self.logger
                )
                let fileSystem = self.fileSystem
                loaded.append(
                    try await Offload.run {
                        try DeviceRuntime(
                            profile: profile, stateDirectory: stateDirectory, pairRecords: pairRecords,
                            behaviour: behaviour, logger: logger, fileSystem: fileSystem)
                    })
            } catch {
                throw VirtualDeviceError.stateUnusable(
                    stateDirectory.path, "device \(profile.name): \(error)")
            }
        }
        var udids = Set<String>()
        for runtime in loaded where !udids.insert(runtime.udid).inserted {
            throw VirtualDeviceError.invalidConfiguration("two devices use UDID \(runtime.udid)")
        }
        runtimes = loaded
        if wifiOnly && announces && loaded.contains(where: { $0.network != nil }) {
            do {
                responder = try MDNSResponder(interfaces: MDNSResponder.defaultInterfaces)
            } catch {
                throw VirtualDeviceError.bindFailed("multicast DNS (UDP 5353)", "\(error)")
            }
        }
        do {
            for runtime in loaded { try await attach(runtime) }
        } catch {
            for runtime in loaded { await runtime.network?.stop() }
            throw error
        }

        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Uploads arrive in reads of up to 256 KiB instead of NIO's default 64 KiB: a quarter
            // of the reads and wake-ups per megabyte.
            .childChannelOption(
                .recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 256 * 1024)
            )
            .childChannelInitializer { [weak self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let stream = try ByteStream(channel: channel)
                    Task { await self?.serveClient(stream) }
                }
            }
        let channel: Channel
        let result: String
        do {
            switch address {
            case .unixSocket(let path):
                // A stale socket file from a previous run would make bind fail; a live one is refused.
                try SocketFile.prepare(path)
                channel = try await bootstrap.withBoundSocket(try SocketFile.listeningSocket(at: path)).get()
                socketFile = SocketFile.bound(path)
                result = "UNIX:\(path)"
            case .tcp(let port):
                channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
                result = "127.0.0.1:\(channel.localAddress?.port ?? port)"
            }
        } catch let error as VirtualDeviceError {
            throw error
        } catch {
            throw VirtualDeviceError.bindFailed("\(address)", "\(error)")
        }
        serverChannel = channel
        clientAddress = result
        let control = ControlServer(daemon: self, logger: logger)
        let controlPath = stateDirectory.appendingPathComponent("control.sock").path
        do {
            try await control.start(path: controlPath)
        } catch {
            try? await channel.close()
            serverChannel = nil
            clientAddress = nil
            throw VirtualDeviceError.bindFailed(
                controlPath, "\(error) (UNIX socket paths are limited to 107 bytes)")
        }
        self.control = control
        logger.info("virtual usbmuxd listening at \(result) with \(loaded.count) device(s)")
        return result
    }

    /// Closes the sockets and every device connection.
    public func stop() async {
        for task in rebootTasks.values { task.cancel() }
        rebootTasks.removeAll()
        try? await serverChannel?.close()
        serverChannel = nil
        await control?.stop()
        control = nil
        for stream in listeners.values { stream.close() }
        listeners.removeAll()
        for runtime in runtimes {
            await runtime.network?.stop()
            await runtime.closeAllConnections()
        }
        networkAttachments.removeAll()
        attachments.removeAll()
        responder?.stop()
        responder = nil
        socketFile?.remove()
        socketFile = nil
        clientAddress = nil
        logger.info("virtual usbmuxd stopped")
    }

    private func serveClient(_ stream: ByteStream) async {
        if case .tcp = address, let client = stream.channel.remoteAddress?.port,
            let server = stream.channel.localAddress?.port,
            !LoopbackPeer.isSameUser(clientPort: client, serverPort: server)
        {
            // Pair records are read through here: only the user running the twins may connect.
            logger.warning("refused a usbmuxd connection from port \(client): another user's process")
            stream.close()
            return
        }
        await UsbmuxConnection(stream: stream, daemon: self, logger: logger).run()
    }

    // MARK: public inspection and control

    /// The configured devices (attached or rebooting).
    public func devices() async -> [VirtualDeviceInfo] {
        var result: [VirtualDeviceInfo] = []
        for runtime in runtimes {
            result.append(
                VirtualDeviceInfo(
                    name: runtime.profile.name, udid: runtime.udid, deviceName: runtime.profile.deviceName,
                    productType: runtime.profile.productType, productVersion: runtime.profile.productVersion,
                    buildVersion: runtime.profile.buildVersion,
                    cpuArchitecture: runtime.profile.cpuArchitecture,
                    deviceID: attachments[runtime.udid]
                        ?? (wifiOnly ? nil : networkAttachments[runtime.udid]),
                    developerImageMounted: await runtime.isDeveloperImageMounted,
                    activeFaults: runtime.faults))
        }
        return result
    }

    /// Adds a fault to a device (one per kind: a new one replaces the old).
    public func inject(_ fault: VirtualFault, udid: String) async throws {
        try await runtime(udid: udid).inject(fault)
    }

    /// The device's faults now (a one-shot fault is gone once it happened).
    public func faults(udid: String) throws -> [VirtualFault] {
        try runtime(udid: udid).faults
    }

    /// The device's user taps "Trust" for the next host that asks to pair within `window` (one
    /// pairing). Otherwise a twin pairs only with the hosts it trusts already (its pre-made pair
    /// record) unless its profile says `hostPairs`; never over the network.
    /// "Reset Location & Privacy" on the device: it trusts no host any more (`InvalidHostID`).
    public func resetTrust(udid: String) async throws {
        try await runtime(udid: udid).resetTrust()
    }

    public func acceptNextPairing(udid: String, within window: Duration = .seconds(120)) async throws {
        try await runtime(udid: udid).acceptNextPairing(within: window)
    }

    /// Sets what a device reports about its battery and storage (kept across restarts).
    public func setHealth(_ health: VirtualDeviceHealth, udid: String) async throws {
        guard (0...100).contains(health.batteryLevel) else {
            throw VirtualDeviceError.invalidConfiguration(
                "batteryLevel \(health.batteryLevel) is not a percentage (0...100)")
        }
        try await runtime(udid: udid).setHealth(health)
    }

    /// What a device reports about its battery and storage.
    public func health(udid: String) async throws -> VirtualDeviceHealth {
        try await runtime(udid: udid).health
    }

    /// When a device last booted (its first start, or the last `reboot`); kept across restarts.
    public func bootedAt(udid: String) async throws -> Date {
        try await runtime(udid: udid).bootedAt
    }

    /// Removes all faults of a device, or only those of one kind (`VirtualFault.kind`).
    public func clearFaults(udid: String, kind: String? = nil) async throws {
        try await runtime(udid: udid).clearFaults(kind: kind)
    }

    /// Reboots a device: `Detached`, connections dropped, app killed, image unmounted, then
    /// `Attached` again (new DeviceID) after `rebootDuration`.
    public func reboot(udid: String) async throws {
        let runtime = try runtime(udid: udid)
        await detach(runtime)
        await runtime.shutDown()
        let duration = rebootDuration
        rebootTasks[udid]?.cancel()
        rebootTasks[udid] = Task { [weak self] in
            try? await Task.sleep(for: duration)
            guard !Task.isCancelled else { return }
            await self?.finishReboot(runtime)
        }
    }

    private func finishReboot(_ runtime: DeviceRuntime) async {
        rebootTasks[runtime.udid] = nil
        guard serverChannel != nil else { return }
        do { try await attach(runtime) } catch {
            logger.error("\(runtime.profile.name) did not come back on the network: \(error)")
        }
    }

    /// Takes a network twin off the network (Wi-Fi off, out of range) or puts it back: its Network
    /// entry goes away with a `Detached` event, nothing listens at its address any more, and the
    /// connections made there are cut. A USB entry stays.
    public func setOnNetwork(_ onNetwork: Bool, udid: String) async throws {
        let runtime = try runtime(udid: udid)
        guard let network = runtime.network else {
            throw VirtualDeviceError.invalidConfiguration("\(runtime.profile.name) is not a network device")
        }
        if onNetwork {
            guard networkAttachments[runtime.udid] == nil else { return }
            let host = try await network.start(runtime: runtime)
            attachNetworkEntry(runtime, host: host)
        } else {
            detachNetworkEntry(runtime)
            await network.stop()
        }
    }

    /// How many TCP connections a network twin accepted at its own address (lockdownd and services):
    /// what libimobiledevice opens for a `Network` entry instead of a usbmuxd `Connect`.
    public func networkConnections(udid: String) async throws -> Int {
        try await runtime(udid: udid).network?.acceptedConnections ?? 0
    }

    /// How many lockdown sessions (StartSession, each with its TLS handshake) the device started
    /// since it booted.
    public func lockdownSessions(udid: String) async throws -> Int {
        try await runtime(udid: udid).sessionsStarted
    }

    /// How many developer tunnels (CoreDeviceProxy handshakes, iOS 17.4+) the device saw since it
    /// booted: one per pymobiledevice3 process that built its own, one per helper that kept one.
    public func developerTunnels(udid: String) async throws -> Int {
        try await runtime(udid: udid).tunnelsStarted
    }

    /// How many times an app was launched on the device since it booted (a launch tried again
    /// counts twice).
    public func appLaunches(udid: String) async throws -> Int {
        try await runtime(udid: udid).appLaunches
    }

    /// How many developer tunnels are open now (a client that ended closed its own).
    public func openDeveloperTunnels(udid: String) async throws -> Int {
        try await runtime(udid: udid).openTunnels
    }

    /// Cuts the device's open developer tunnels (their CoreDeviceProxy connections), as a cable moved
    /// to another port would; the device stays attached. How many were cut.
    @discardableResult
    public func dropDeveloperTunnels(udid: String) async throws -> Int {
        try await runtime(udid: udid).dropTunnels()
    }

    /// The address a network twin listens on while on the network.
    public func networkAddress(udid: String) async throws -> String? {
        let runtime = try runtime(udid: udid)
        guard networkAttachments[runtime.udid] != nil else { return nil }
        return await runtime.network?.host
    }

    /// How many clients read a device's log now (syslog_relay, os_trace_relay): a reader sees only
    /// what is logged from then on.
    public func logReaders(udid: String) throws -> Int {
        try runtime(udid: udid).log.readerCount
    }

    /// The notification names a device's notification_proxy clients observe now.
    public func observedNotifications(udid: String) throws -> Set<String> {
        try runtime(udid: udid).notifications.observedNames
    }

    /// Apps installed on a device.
    public func installedApps(udid: String) async throws -> [VirtualInstalledApp] {
        try await runtime(udid: udid).installedApps
    }

    /// The foreground app of a device (launch arguments, screen), or nil on the home screen.
    public func runningApp(udid: String) async throws -> VirtualRunningApp? {
        try await runtime(udid: udid).runningApp
    }

    /// Ends the foreground app as iOS does when it kills one (memory pressure, a crash without a
    /// report): back to the home screen, the app's log says it exited.
    public func killApp(udid: String) async throws {
        try await runtime(udid: udid).terminateRunningApp(reason: "killed")
    }

    /// Where an app's data container lives on the host (`Documents/ha-log.txt`, `Library/Preferences`),
    /// whether or not the app is installed.
    public func appDataContainer(udid: String, bundleIdentifier: String) throws -> URL {
        try runtime(udid: udid).paths.dataContainer(bundleIdentifier)
    }

    /// The last AFC upload the device received (for throughput measurements).
    public func lastUpload(udid: String) async throws -> VirtualUploadStatistics? {
        try await runtime(udid: udid).lastUpload
    }

    /// What the device's screen shows now.
    public func screen(udid: String) async throws -> VirtualScreen {
        try await runtime(udid: udid).screen
    }

    /// A screenshot as the device would send it (PNG or TIFF by firmware).
    public func screenshot(udid: String) async throws -> Data {
        let runtime = try runtime(udid: udid)
        return try await ScreenRenderer.screenshot(of: runtime)
    }

    func runtime(udid: String) throws -> DeviceRuntime {
        guard let runtime = runtimes.first(where: { $0.udid == udid || $0.profile.name == udid }) else {
            throw VirtualDeviceError.unknownDevice(udid, runtimes.map(\.udid))
        }
        return runtime
    }

    // MARK: usbmuxd internals

    private func attach(_ runtime: DeviceRuntime) async throws {
        if runtime.profile.isOnUSB {
            let deviceID = nextDeviceID
            nextDeviceID += 1
            attachments[runtime.udid] = deviceID
            broadcast(
                UsbmuxConnection.attachedMessage(attachedDevice(runtime, deviceID: deviceID, host: nil)))
            logger.info("attached \(runtime.profile.name) (\(runtime.udid)) as DeviceID \(deviceID)")
        }
        if let network = runtime.network {
            attachNetworkEntry(runtime, host: try await network.start(runtime: runtime))
        }
    }

    private func attachNetworkEntry(_ runtime: DeviceRuntime, host: String) {
        let deviceID = nextDeviceID
        nextDeviceID += 1
        networkAttachments[runtime.udid] = deviceID
        if wifiOnly {
            responder?.add(Self.announcement(runtime, host: host))
            logger.info(
                "\(runtime.profile.name) (\(runtime.udid)) on the network at \(host), announced over mDNS")
            return
        }
        broadcast(UsbmuxConnection.attachedMessage(attachedDevice(runtime, deviceID: deviceID, host: host)))
        logger.info(
            "\(runtime.profile.name) (\(runtime.udid)) on the network at \(host) as DeviceID \(deviceID)")
    }

    private func detach(_ runtime: DeviceRuntime) async {
        if let deviceID = attachments.removeValue(forKey: runtime.udid) {
            broadcast(["MessageType": "Detached", "DeviceID": deviceID])
            logger.info("detached \(runtime.profile.name) (DeviceID \(deviceID))")
        }
        detachNetworkEntry(runtime)
        await runtime.network?.stop()
    }

    private func detachNetworkEntry(_ runtime: DeviceRuntime) {
        guard let deviceID = networkAttachments.removeValue(forKey: runtime.udid) else { return }
        if wifiOnly {
            responder?.remove(name: Self.announcement(runtime, host: "").name)
            logger.info("\(runtime.profile.name) left the network (goodbye sent over mDNS)")
            return
        }
        broadcast(["MessageType": "Detached", "DeviceID": deviceID])
        logger.info("\(runtime.profile.name) left the network (DeviceID \(deviceID))")
    }

    /// What an iOS device announces for Wi-Fi sync (`_apple-mobdev2._tcp`, as netmuxd and
    /// pymobiledevice3 browse it): `<Wi-Fi MAC>@<IPv6 link-local>` on port 32498, its host name, and
    /// its address (here the twin's own loopback address, where its lockdownd listens on 62078).
    static func announcement(_ runtime: DeviceRuntime, host: String) -> MDNSResponder.Instance {
        let mac = runtime.identity.wifiAddress.lowercased()
        let octets = mac.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        var linkLocal = "fe80::1"
        if octets.count == 6 {
            // The modified EUI-64 link-local address a device derives from its MAC (RFC 4291 §2.5.1).
            let eui = [octets[0] ^ 0x02, octets[1], octets[2], 0xFF, 0xFE, octets[3], octets[4], octets[5]]
            linkLocal =
                "fe80::"
                + stride(from: 0, to: 8, by: 2).map {
                    String(UInt16(eui[$0]) << 8 | UInt16(eui[$0 + 1]), radix: 16)
                }
                .joined(separator: ":")
        }
        let hostName = runtime.profile.deviceName.unicodeScalars
            .map { CharacterSet.alphanumerics.contains($0) ? String($0) : "-" }.joined()
        return MDNSResponder.Instance(
            name: "\(mac)@\(linkLocal)", service: "_apple-mobdev2._tcp.local",
            host: "\(hostName)-\(runtime.udid.prefix(8)).local", port: 32_498, address: host)
    }

    private func attachedDevice(_ runtime: DeviceRuntime, deviceID: Int, host: String?) -> AttachedDevice {
        AttachedDevice(
            deviceID: deviceID, udid: runtime.udid, isPad: runtime.profile.deviceClass == "iPad",
            locationID: 0x1410_0000 + deviceID, networkAddress: host,
            wifiAddress: runtime.identity.wifiAddress)
    }

    func attachedDevices() async -> [AttachedDevice] {
        var devices: [AttachedDevice] = []
        for runtime in runtimes {
            if let deviceID = attachments[runtime.udid] {
                devices.append(attachedDevice(runtime, deviceID: deviceID, host: nil))
            }
            if !wifiOnly, let deviceID = networkAttachments[runtime.udid],
                let host = await runtime.network?.host
            {
                devices.append(attachedDevice(runtime, deviceID: deviceID, host: host))
            }
        }
        return devices
    }

    func addListener(_ stream: ByteStream) async {
        listeners[ObjectIdentifier(stream)] = stream
        for device in await attachedDevices() {
            if let frame = try? UsbmuxConnection.frame(UsbmuxConnection.attachedMessage(device), tag: 0) {
                stream.writeWithoutWaiting(frame)
            }
        }
    }

    func removeListener(_ stream: ByteStream) {
        listeners.removeValue(forKey: ObjectIdentifier(stream))
    }

    func broadcastPaired(deviceID: Int) {
        broadcast(["MessageType": "Paired", "DeviceID": deviceID])
    }

    private func broadcast(_ message: [String: Any]) {
        guard let frame = try? UsbmuxConnection.frame(message, tag: 0) else { return }
        for stream in listeners.values { stream.writeWithoutWaiting(frame) }
    }

    func resolveConnect(deviceID: Int, port: UInt16) async -> ConnectTarget {
        // Apple's usbmuxd also tunnels to a Network entry; libimobiledevice 1.3.0 connects directly.
        guard
            let udid = attachments.first(where: { $0.value == deviceID })?.key
                ?? networkAttachments.first(where: { $0.value == deviceID })?.key,
            let runtime = runtimes.first(where: { $0.udid == udid })
        else { return .noDevice }
        if runtime.isStalled(at: .usbmuxConnect) { return .stalled(runtime) }
        if port == 62_078 { return .lockdown(runtime) }
        if let kind = await runtime.takeService(port: port) { return .service(runtime, kind) }
        return .refused
    }
}
