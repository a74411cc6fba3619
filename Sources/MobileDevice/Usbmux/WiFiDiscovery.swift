import Foundation
import HADeployCore
import MulticastDNS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Finds Wi-Fi-synced devices for hadeploy's usbmuxd (`UsbmuxRelay`) on a thread of its own: over
/// multicast DNS (`_apple-mobdev2._tcp`, as each device announces itself) and at the addresses
/// devices.yaml gives. An announcement is matched to a device by the Wi-Fi MAC address its name starts
/// with and the one a pair record keeps (as pymobiledevice3 matches them), else by asking the
/// device's lockdownd for its UDID (allowed without pairing). It browses while a wanted device is
/// missing — a sleeping iPad is found when it wakes, within its step's deadline — and, for
/// `hadeploy muxer` (every device wanted), all the time.
final class WiFiDiscovery: @unchecked Sendable {
    private let lock = NSLock()
    /// The UDIDs a run needs (nil: every device that answers, for `hadeploy muxer`).
    private var wanted: Set<String>? = []
    /// UDID → host name or address from devices.yaml (`address:`).
    private var addresses: [String: String] = [:]
    private var started = false
    /// UDID → why it is not where devices.yaml says (nothing answers there, another device does).
    private var notes: [String: String] = [:]
    private var rounds = 0
    private let wake = DispatchSemaphore(value: 0)
    /// How long one browse listens for answers.
    static let window: Duration = .milliseconds(1500)

    /// Looks for `udids` from now on (nil: every device), at `addresses` first; starts the thread
    /// the first time.
    func want(_ udids: Set<String>?, addresses more: [String: String], relay: UsbmuxRelay) {
        let start = lock.withLock {
            if let udids {
                wanted = wanted.map { $0.union(udids) }
            } else {
                wanted = nil
            }
            addresses.merge(more) { $1 }
            defer { started = true }
            return !started
        }
        if start {
            let thread = Thread { [self] in loop(relay) }
            thread.name = "hadeploy Wi-Fi discovery"
            thread.start()
        } else {
            wake.signal()
        }
    }

    /// Browses now rather than at the next round (a ListDevices is waiting for a missing device).
    func nudge() { wake.signal() }

    /// What the last round learnt about `udid` at its configured address, when it was not there.
    func note(for udid: String) -> String? { lock.withLock { notes[udid] } }

    /// How many browses ran (for `devices`, which waits for the first).
    var completedRounds: Int { lock.withLock { rounds } }

    private func loop(_ relay: UsbmuxRelay) {
        while true {
            let (wanted, addresses) = lock.withLock { (self.wanted, self.addresses) }
            var listed = Set(relay.wifiDevices.map(\.udid))
            // Devices the route's usbmuxd lists on the network itself (macOS's, the twins' when they
            // are not Wi-Fi only) need no finding.
            if wanted != nil { listed.formUnion(Self.upstreamNetworkSerials(relay.route)) }
            let missing = wanted.map { $0.subtracting(listed) }
            if let missing, missing.isEmpty {
                lock.withLock { rounds += 1 }
                _ = wake.wait(timeout: .now() + 5)
                continue
            }
            relay.add(round(missing: missing, addresses: addresses, relay: relay))
            lock.withLock { rounds += 1 }
            // Every device (`hadeploy muxer`): a new browse every few seconds; a missing one: sooner.
            _ = wake.wait(timeout: .now() + (wanted == nil ? 3 : 1))
        }
    }

    /// One round: the configured addresses, then one browse.
    func round(missing: Set<String>?, addresses: [String: String], relay: UsbmuxRelay) -> [WiFiDevice] {
        var found: [WiFiDevice] = []
        var notes: [String: String] = [:]
        for (udid, host) in addresses.sorted(by: { $0.key < $1.key }) where missing?.contains(udid) ?? true {
            guard let ip = Self.resolve(host) else {
                notes[udid] = "its address \(host) does not resolve"
                continue
            }
            switch Self.uniqueDeviceID(at: ip) {
            case udid?:
                if let unproven = Self.unproven(udid: udid, at: ip, relay: relay) {
                    notes[udid] = "at its address \(host) (\(ip)) \(unproven)"
                    continue
                }
                found.append(
                    WiFiDevice(udid: udid, address: ip, foundBy: "its address \(host) in devices.yaml"))
            case let other?:
                notes[udid] = "at its address \(host) (\(ip)) another device answers (\(other))"
            case nil:
                notes[udid] = "nothing answers at its address \(host) (\(ip), port 62078)"
            }
        }
        var macs = relay.pairRecords.wifiMACAddresses()
        for udid in missing ?? [] where macs[udid] == nil {
            if let record = Self.upstreamPairRecord(udid: udid, upstream: relay.route),
                let mac = PairRecordFolder.wifiMACAddress(inRecord: record)
            {
                macs[udid] = mac
            }
        }
        let byMAC = Dictionary(macs.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        let services = (try? MDNSBrowser.browse(within: Self.window)) ?? []
        for service in services {
            guard
                let address = service.addresses.first(where: { !$0.contains(":") }) ?? service.addresses.first
            else { continue }
            let udid = service.wifiMACAddress.flatMap { byMAC[$0] } ?? Self.uniqueDeviceID(at: address)
            guard let udid, missing?.contains(udid) ?? true, !found.contains(where: { $0.udid == udid })
            else {
                continue
            }
            if let unproven = Self.unproven(udid: udid, at: address, relay: relay) {
                // A spoofed answer (anyone on the Wi-Fi, or a local user: port 5353 is shared) is
                // never used, and never replaces the address the device proved.
                notes[udid] = "over mDNS as \(service.instance) at \(address) \(unproven)"
                continue
            }
            var foundBy = "mDNS as \(service.instance)"
            if let configured = addresses[udid] {
                // Say it: the address in devices.yaml is out of date (or the device moved).
                foundBy += " at \(address), not at its address \(configured) in devices.yaml"
            }
            if let announced = service.wifiMACAddress, let recorded = macs[udid], announced != recorded {
                // iOS 14+ "Private Wi-Fi Address": found by asking the device, not by its name.
                foundBy += " (a private Wi-Fi address \(announced), not its own \(recorded))"
            }
            notes[udid] = nil
            found.append(
                WiFiDevice(
                    udid: udid, address: address, foundBy: foundBy, wifiMACAddress: service.wifiMACAddress))
        }
        lock.withLock { self.notes.merge(notes) { $1 } }
        return found
    }

    /// `host`'s address (IPv4 first): a usbmuxd Network entry carries an address, not a name.
    static func resolve(_ host: String) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = SocketCalls.streamSocket
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var candidates: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ai_next }
            guard let address = entry.pointee.ai_addr else { continue }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if entry.pointee.ai_family == AF_INET {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var value = $0.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &value, &buffer, socklen_t(buffer.count))
                }
                candidates.insert(
                    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    at: 0)
            } else if entry.pointee.ai_family == AF_INET6 {
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var value = $0.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &value, &buffer, socklen_t(buffer.count))
                }
                candidates.append(
                    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return candidates.first
    }

    /// The device's UDID as its lockdownd at `host` gives it before any pairing (`GetValue
    /// UniqueDeviceID`); nil when nothing answers there in 2 seconds. Anyone can answer this: it
    /// names a candidate, `WiFiIdentity.prove` decides.
    static func uniqueDeviceID(at host: String) -> String? {
        guard
            case .success(let socket) = ProbeSocket.openTCP(
                host: host, port: WiFiDevice.lockdownPort, timeout: 2)
        else { return nil }
        return WiFiIdentity.exchange(
            socket,
            ["Label": .string("hadeploy"), "Request": .string("GetValue"), "Key": .string("UniqueDeviceID")]
        )?["Value"]?.string
    }

    /// Why `udid` is not to be used at `address`, or nil once the device there proved it holds its
    /// pair record's DeviceCertificate (or the relay already lists it there, proven before).
    static func unproven(udid: String, at address: String, relay: UsbmuxRelay) -> String? {
        if relay.wifiDevices.contains(where: { $0.udid == udid && $0.address == address }) { return nil }
        let record =
            relay.pairRecords.read(udid: udid) ?? upstreamPairRecord(udid: udid, upstream: relay.route)
        switch WiFiIdentity.prove(udid: udid, at: address, record: record) {
        case .proven: return nil
        case .unproven(let why):
            return "a device answered as \(udid) but its identity was not proven (\(why)): not used"
        }
    }

    /// The serials the route's usbmuxd lists as `Network` entries.
    static func upstreamNetworkSerials(_ upstream: String) -> Set<String> {
        guard case .success(let socket) = ProbeSocket.open(upstream, timeout: 2) else { return [] }
        let frame = UsbmuxFrame.plist(
            [
                "MessageType": .string("ListDevices"), "ProgName": .string("hadeploy"),
                "ClientVersionString": .string("hadeploy"),
            ], tag: 1)
        guard socket.sendAll(frame.encoded), let answer = UsbmuxMuxer.read(socket),
            let list = answer.dictionary?["DeviceList"]?.array
        else { return [] }
        return UsbmuxMuxer.networkSerials(list)
    }

    /// The pair record upstream keeps for `udid` (the system usbmuxd's, from a USB pairing).
    static func upstreamPairRecord(udid: String, upstream: String) -> Data? {
        guard case .success(let socket) = ProbeSocket.open(upstream, timeout: 2) else { return nil }
        let frame = UsbmuxFrame.plist(
            [
                "MessageType": .string("ReadPairRecord"), "PairRecordID": .string(udid),
                "ProgName": .string("hadeploy"), "ClientVersionString": .string("hadeploy"),
            ],
            tag: 1)
        guard socket.sendAll(frame.encoded), let answer = UsbmuxMuxer.read(socket) else { return nil }
        return answer.dictionary?["PairRecordData"]?.data
    }
}
