import Foundation
import HADeployCore

/// Entry point for devices reached through usbmuxd (local, or remote via `USBMUXD_SOCKET_ADDRESS`).
public enum USBTransport {
    /// Sends this process's usbmuxd connections to `address` (`UNIX:/path` or `host:port`; nil: this
    /// machine's usbmuxd) from now on, through hadeploy's relay (`UsbmuxRelay`): the route is a value
    /// of the relay, read per connection; the environment libusbmuxd reads is set once, to the relay.
    /// Set it before a run's device work, never per device. The relay's private socket is made in the
    /// first of `folders` that gives a short enough path (the run's state folder, then the temporary one).
    ///
    /// `others`: the run's other usbmuxd routes (another USB host's tunnel, the twins'), each with the
    /// UDIDs it serves: hadeploy's usbmuxd then lists their devices too, under DeviceIDs of its own,
    /// and reaches each through its own route — every route of a run in one process. Each call
    /// replaces the last one's.
    public static func route(
        to address: String?, others: [(address: String, udids: Set<String>)] = [], folders: [String]
    ) throws {
        try UsbmuxRelay.process.route(to: address, others: others, folders: folders)
    }

    /// Reaches `udids` (nil: every device found) over Wi-Fi from now on, whatever the route's usbmuxd lists: hadeploy's own
    /// usbmuxd (the relay, as a muxer) lists each as a `Network` entry once it is found — over
    /// multicast DNS, or at its address in `addresses` (UDID → host) — and connects to it directly.
    /// Pair records are read from `pairRecords` first (where `hadeploy pair` keeps them), then from
    /// the route's usbmuxd. Set the route first.
    public static func reachOverWiFi(
        _ udids: Set<String>?, addresses: [String: String], pairRecords: URL, fileSystem: any FileSystem
    ) throws {
        let relay = UsbmuxRelay.process
        let records = PairRecordFolder(folder: pairRecords, fileSystem: fileSystem)
        try records.requireUsable(step: "pair records")
        try relay.startIfNeeded()
        relay.setPairRecords(records)
        relay.discovery.want(udids, addresses: addresses, relay: relay)
    }

    /// Serves hadeploy's usbmuxd at `path` (`hadeploy muxer --socket PATH`) until the process ends:
    /// `upstream`'s devices (nil: this machine's usbmuxd, when it runs), `others`' (USB hosts' tunnels,
    /// each for its devices) and every Wi-Fi device found over multicast DNS or at `addresses`, for any
    /// libimobiledevice or pymobiledevice3 client.
    public static func serveMuxer(
        at path: String, upstream: String?, others: [(address: String, udids: Set<String>)] = [],
        addresses: [String: String], pairRecords: URL, fileSystem: any FileSystem
    ) throws {
        let relay = UsbmuxRelay.process
        let records = PairRecordFolder(folder: pairRecords, fileSystem: fileSystem)
        try records.requireUsable(step: "hadeploy muxer --pair-records")
        relay.setPairRecords(records)
        try relay.serve(at: path, upstream: upstream, others: others)
        relay.discovery.want(nil, addresses: addresses, relay: relay)
    }

    /// hadeploy's own usbmuxd in this process (`UNIX:/path`), once a route is set: the address to give
    /// a child process (pymobiledevice3), so it reaches the same devices, Wi-Fi ones included.
    public static var relayAddress: String? { UsbmuxRelay.process.ownAddress }

    /// The Wi-Fi devices hadeploy's usbmuxd lists now, with how each was found.
    public static var wifiDevices: [WiFiDevice] { UsbmuxRelay.process.wifiDevices }

    /// Waits until discovery has browsed at least once more (`devices`, `muxer` at start), at most `limit`.
    public static func waitForWiFiDiscovery(limit: Duration, clock: any WallClock) async {
        let start = UsbmuxRelay.process.discovery.completedRounds
        let deadline = clock.deadline(after: limit)
        while UsbmuxRelay.process.discovery.completedRounds == start, clock.instant() < deadline {
            try? await clock.sleep(for: .milliseconds(100))
        }
    }

    /// The usbmuxd this process reaches before any route is set (`USBMUXD_SOCKET_ADDRESS` as the
    /// process started, nil: the default), for messages: libusbmuxd reads it, this code does not.
    public static func recordStartingAddress(_ address: String?) {
        UsbmuxDirectory.recordAddress(address)
    }

    /// Every device usbmuxd lists, with name, model, iOS version, CPU and pairing state. A device
    /// that cannot be asked still appears, with `pairing` and `problem` saying why.
    public static func devices(timeouts: USBTimeouts = USBTimeouts(), clock: any WallClock) async throws
        -> [USBDeviceSummary]
    {
        let entries = try await listEntries(timeouts: timeouts)
        return await withTaskGroup(of: (Int, USBDeviceSummary).self) { group in
            for (index, entry) in entries.enumerated() {
                group.addTask { (index, await summary(of: entry, timeouts: timeouts, clock: clock)) }
            }
            var results: [(Int, USBDeviceSummary)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Waits (until `deadline`) for usbmuxd to list `udid`, checks pairing with a full lockdown
    /// handshake and reads the device's identity.
    public static func connect(
        udid: String, deadline: ContinuousClock.Instant, options: USBDeviceOptions
    ) async throws -> USBDevice {
        do {
            return try await connectListed(udid: udid, deadline: deadline, options: options)
        } catch let error as MobileDeviceError where options.network {
            throw error.overNetwork()
        }
    }

    private static func connectListed(
        udid: String, deadline: ContinuousClock.Instant, options: USBDeviceOptions
    ) async throws -> USBDevice {
        let anonymous = DeviceIdentity(name: nil, udid: udid)
        let (network, clock) = (options.network, options.clock)
        try await waitUntilListed(
            udid: udid, deadline: deadline, timeouts: options.timeouts, device: anonymous, network: network,
            clock: clock)
        var timeouts = options.timeouts
        timeouts.handshake = min(timeouts.handshake, max(clock.remaining(until: deadline), .milliseconds(1)))
        let session = try await DeviceSession.open(
            identity: anonymous, timeouts: timeouts, network: network, clock: clock)
        // Name first (given without pairing), so a pairing problem names the device.
        let plain = try await session.lockdown(handshake: false, timeouts: timeouts)
        let name = try? await session.run("lockdownd_get_value DeviceName", within: timeouts.request) {
            try plain.value(key: "DeviceName")?.string
        }
        let identity = DeviceIdentity(name: name ?? nil, udid: udid)
        let named = try await DeviceSession.open(
            identity: identity, timeouts: timeouts, network: network, clock: clock)
        let lockdown = try await named.lockdown(handshake: true, timeouts: timeouts)
        let info = try await USBDevice.readInfo(lockdown: lockdown, session: named, timeouts: timeouts)
        // Kept for the steps that follow (mount, install, launch, …): one handshake per device.
        return USBDevice(info: info, options: options, session: (named, lockdown))
    }

    /// Whether usbmuxd at the current address (`USBMUXD_SOCKET_ADDRESS` or the default) answers
    /// something other than its protocol: nil when it works or is simply not running, else what it
    /// sent. `hadeploy devices` fails on a broken usbmuxd rather than listing nothing.
    public static func usbmuxdFault() -> String? {
        for address in [UsbmuxRelay.libusbmuxdAddress(), UsbmuxDirectory.address] {
            if let problem = UsbmuxdSocketTrust.problem(address) {
                let refusal = UsbmuxdSocketTrust.refusal(address, problem, step: "usbmuxd")
                return refusal.reason + ". " + refusal.nextStep
            }
        }
        if case .broken(let what) = UsbmuxProbe.probe(address: UsbmuxDirectory.address) {
            return "usbmuxd at \(UsbmuxDirectory.address) answered ListDevices wrongly: \(what)"
        }
        return nil
    }

    // MARK: internals

    /// libusbmuxd writes with plain send(2) and Linux has no SO_NOSIGPIPE: a device closing its end
    /// (debugserver after `D`, a rebooting device) would kill the whole process with SIGPIPE.
    /// Ignoring it turns that into the EPIPE error the wrappers already handle.
    static let ignoreBrokenPipes: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    static func listEntries(timeouts: USBTimeouts) async throws -> [UsbmuxEntry] {
        ignoreBrokenPipes
        let worker = DeviceWorker(label: "usbmuxd", device: nil)
        return try await worker.run("usbmuxd_get_device_list", within: timeouts.usbmuxd) {
            try UsbmuxDirectory.list()
        }
    }

    /// How long usbmuxd may be unreachable or broken while waiting for a device before the step ends.
    static let usbmuxdGrace: Duration = .seconds(2)

    /// Polls usbmuxd until the device is listed (it may be rebooting or just plugged in): its USB
    /// entry, or with `network` its Network entry. `deadline` is a reading of `clock`.
    static func waitUntilListed(
        udid: String, deadline: ContinuousClock.Instant, timeouts: USBTimeouts, device: DeviceIdentity,
        network: Bool = false, clock: any WallClock
    ) async throws {
        var seen: [String] = []
        // Whether usbmuxd answered at least once: then what it listed is what is said, not a last poll
        // the deadline cut short ("no answer within 1 ms").
        var listedOnce = false
        var failure: MobileDeviceError?
        var failingSince: ContinuousClock.Instant?
        while true {
            var polling = timeouts
            polling.usbmuxd = min(timeouts.usbmuxd, max(clock.remaining(until: deadline), .milliseconds(1)))
            do {
                let entries = try await listEntries(timeouts: polling)
                if entries.contains(where: { $0.udid == udid && $0.isNetwork == network }) { return }
                seen = entries.map { $0.isNetwork ? "\($0.udid) (Network)" : $0.udid }
                listedOnce = true
                if network { UsbmuxRelay.process.discovery.nudge() }
                failure = nil
                failingSince = nil
            } catch let error as MobileDeviceError
                where error.kind == .usbmuxdUnavailable && !error.isTransient
            {
                throw error.on(device)  // A refused usbmuxd (another user's socket) is not waited for.
            } catch let error as MobileDeviceError where error.kind != .cancelled {
                failure = error
                // A device may take a while to appear; usbmuxd itself gone or broken will not come
                // back by waiting out the step's deadline (a restart takes well under the grace).
                if error.kind == .usbmuxdUnavailable || error.kind == .protocolError {
                    let since = failingSince ?? clock.instant()
                    failingSince = since
                    if clock.elapsed(since: since) >= usbmuxdGrace {
                        throw MobileDeviceError(
                            error.kind, step: error.step, device: device,
                            reason: "connection to usbmuxd lost: \(error.reason)", nextStep: error.nextStep,
                            isTransient: true)
                    }
                }
            }
            if clock.deadline(after: .milliseconds(250)) >= deadline {
                if let failure, failure.kind == .usbmuxdUnavailable || failure.kind == .protocolError {
                    throw failure.on(device)
                }
                let listed =
                    (listedOnce ? nil : failure.map { "nothing in time (\($0.reason))" })
                    ?? (seen.isEmpty ? "no devices" : "only " + seen.joined(separator: ", "))
                if network {
                    throw MobileDeviceError(
                        .notConnected, step: "usbmuxd_get_device_list", device: device,
                        reason:
                            "not found on the network: no answer over multicast DNS"
                            + (UsbmuxRelay.process.discovery.note(for: udid).map { ", and \($0)" } ?? "")
                            + "; usbmuxd at \(UsbmuxDirectory.address) lists \(listed)",
                        nextStep: MobileDeviceError.networkNextStep, isTransient: true)
                }
                throw MobileDeviceError(
                    .notConnected, step: "usbmuxd_get_device_list", device: device,
                    reason: "usbmuxd at \(UsbmuxDirectory.address) lists \(listed)",
                    nextStep:
                        "Plug the device in (or check its USB host), unlock it, and run `idevice_id -l` "
                        + "to see what usbmuxd lists.",
                    isTransient: true)
            }
            try await clock.sleep(for: .milliseconds(250))
        }
    }

    private static func summary(of entry: UsbmuxEntry, timeouts: USBTimeouts, clock: any WallClock) async
        -> USBDeviceSummary
    {
        let connection = entry.isNetwork ? "Network" : "USB"
        var values: [String: String] = [:]
        var identity = DeviceIdentity(name: nil, udid: entry.udid)
        do {
            let session = try await DeviceSession.open(
                identity: identity, timeouts: timeouts, network: entry.isNetwork, clock: clock)
            let plain = try await session.lockdown(handshake: false, timeouts: timeouts)
            values = try await session.run("lockdownd_get_value", within: timeouts.request) {
                var found: [String: String] = [:]
                for key in ["DeviceName", "ProductType", "ProductVersion", "BuildVersion", "CPUArchitecture"]
                {
                    if let value = try plain.value(key: key)?.string { found[key] = value }
                }
                return found
            }
            identity.name = values["DeviceName"]
            let hasRecord = try await session.run("usbmuxd_read_pair_record", within: timeouts.usbmuxd) {
                UsbmuxDirectory.hasPairRecord(udid: entry.udid)
            }
            if !hasRecord {
                return make(
                    entry, values, connection, .notPaired,
                    "\(identity) has not trusted this computer yet: unlock it and tap Trust when asked")
            }
            let named = try await DeviceSession.open(
                identity: identity, timeouts: timeouts, network: entry.isNetwork, clock: clock)
            _ = try await named.lockdown(handshake: true, timeouts: timeouts)
            return make(entry, values, connection, .paired, nil)
        } catch let error as MobileDeviceError {
            let state: PairingState
            switch error.kind {
            case .trustPending: state = .trustPending
            case .passcodeLocked: state = .passcodeLocked
            case .pairingDenied: state = .denied
            case .pairingInvalid: state = .invalid
            default: state = .unknown
            }
            return make(entry, values, connection, state, error.on(identity).description)
        } catch {
            return make(entry, values, connection, .unknown, "\(identity): \(error)")
        }
    }

    private static func make(
        _ entry: UsbmuxEntry, _ values: [String: String], _ connection: String, _ pairing: PairingState,
        _ problem: String?
    ) -> USBDeviceSummary {
        let wifi = entry.isNetwork ? UsbmuxRelay.process.wifiDevices.first { $0.udid == entry.udid } : nil
        return USBDeviceSummary(
            udid: entry.udid, name: values["DeviceName"], productType: values["ProductType"],
            productVersion: values["ProductVersion"], buildVersion: values["BuildVersion"],
            cpuArchitecture: values["CPUArchitecture"], connection: connection, pairing: pairing,
            problem: problem, address: wifi?.address, foundBy: wifi?.foundBy)
    }
}
