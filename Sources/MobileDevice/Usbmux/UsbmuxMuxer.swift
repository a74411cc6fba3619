import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// hadeploy's own usbmuxd, for the devices this machine's usbmuxd does not list: Linux's usbmuxd
/// lists USB devices only, so a Wi-Fi-synced iPad is out of reach of libimobiledevice and
/// pymobiledevice3 there. Each client connection is read request by request (PROTOCOL.md §1):
///
/// - `ListDevices` and `Listen` give the upstream usbmuxd's devices (this machine's, the twins', a USB
///   host's) and then the Wi-Fi devices as `Network` entries, with DeviceIDs of their own (from
///   0x10000, clear of any usbmuxd's);
/// - `Connect` to a Wi-Fi device opens TCP to its address and splices; any other goes upstream;
/// - pair records are read from the muxer's own folder first (where `hadeploy pair` keeps them), then
///   upstream; a saved one is kept in both;
/// - everything else goes upstream as it came, and its answer comes back as it was sent.
///
/// Without Wi-Fi devices the relay does not read anything and splices byte for byte, as before.
struct UsbmuxMuxer: Sendable {
    let client: ProbeSocket
    let upstream: String
    let relay: UsbmuxRelay

    /// Frames in and out: the one usbmuxd codec, with libplist's plists (`UsbmuxFrame.plist(_:tag:)`).
    typealias Frame = UsbmuxFrame

    /// How long an answer from the upstream usbmuxd is waited for.
    static let upstreamPatience: Double = 30

    static func read(_ socket: ProbeSocket) -> Frame? {
        let bytes = socket.receive(count: Frame.headerSize)
        guard bytes.data.count == Frame.headerSize, let header = try? Frame.header(bytes.data) else {
            return nil
        }
        let payload = socket.receive(count: header.payloadLength)
        guard payload.data.count == header.payloadLength else { return nil }
        return Frame(version: header.version, message: header.message, tag: header.tag, payload: payload.data)
    }

    func serve() {
        client.clearTimeouts()
        while let frame = Self.read(client) {
            guard frame.version == 1, frame.message == 8, let request = frame.dictionary else {
                // The old binary protocol (libusbmuxd falls back to it only when told to): upstream as is.
                splice(sending: frame.encoded)
                return
            }
            let type = request["MessageType"]?.string ?? ""
            let others = relay.otherUpstreams
            switch type {
            case "ListDevices":
                var list: [PlistValue] = []
                switch ask(frame) {
                case .unreachable:
                    break  // No usbmuxd here: the Wi-Fi devices are all there is.
                case .answered(let answer) where answer.dictionary?["DeviceList"]?.array != nil:
                    list = answer.dictionary?["DeviceList"]?.array ?? []
                case .answered, .broken:
                    // A usbmuxd that answers wrongly is shown as it is (the probes then say what it
                    // sent), never hidden behind the Wi-Fi devices or another route's.
                    guard !others.isEmpty else {
                        splice(sending: frame.encoded)
                        return
                    }
                }
                if !others.isEmpty {
                    // A device another route serves is that route's, wherever else it is listed.
                    let claimed = others.reduce(into: Set<String>()) { $0.formUnion($1.udids) }
                    list.removeAll { Self.serial(of: $0).map(claimed.contains) ?? false }
                    for other in others {
                        guard case .answered(let answer) = ask(frame, at: other.address) else { continue }
                        list += (answer.dictionary?["DeviceList"]?.array ?? []).compactMap {
                            Self.serial(of: $0).map(other.udids.contains) == true
                                ? Self.remapped($0, by: other.offset) : nil
                        }
                    }
                }
                list += relay.wifiEntries(excluding: Self.networkSerials(list)).map {
                    PlistValue.dictionary($0)
                }
                send(.plist(["DeviceList": .array(list)], tag: frame.tag))
            case "Listen":
                listen(frame)
                return
            case "Connect":
                if connect(frame, request) { return }
            case "ReadPairRecord":
                let udid = request["PairRecordID"]?.string ?? ""
                if let record = relay.pairRecords.read(udid: udid) {
                    send(.plist(["PairRecordData": .data(record)], tag: frame.tag))
                } else {
                    switch ask(frame, at: Self.owner(of: udid, among: others) ?? upstream) {
                    case .answered(let answer): send(answer)
                    // Real usbmuxd answers ENOENT in the Number field (PROTOCOL.md §1.4).
                    case .unreachable: send(.result(2, tag: frame.tag))
                    case .broken:
                        splice(sending: frame.encoded)
                        return
                    }
                }
            case "SavePairRecord":
                let udid = request["PairRecordID"]?.string ?? ""
                if let data = request["PairRecordData"]?.data {
                    relay.pairRecords.save(udid: udid, record: data)
                }
                var forwarded = frame
                if let id = request["DeviceID"]?.integer,
                    let other = others.first(where: { $0.udids.contains(udid) }),
                    let original = other.upstreamID(Int(id))
                {
                    var changed = request
                    changed["DeviceID"] = .integer(Int64(original))
                    forwarded = .plist(changed, tag: frame.tag)
                }
                _ = exchange(forwarded, at: Self.owner(of: udid, among: others) ?? upstream)
                send(.result(0, tag: frame.tag))
            case "DeletePairRecord":
                let udid = request["PairRecordID"]?.string ?? ""
                let here = relay.pairRecords.delete(udid: udid)
                let there = exchange(frame, at: Self.owner(of: udid, among: others) ?? upstream)?.dictionary?[
                    "Number"]?.integer
                send(.result(here || there == 0 ? 0 : 2, tag: frame.tag))
            case "ReadBUID":
                send(
                    exchange(frame) ?? .plist(["BUID": .string(relay.pairRecords.systemBUID)], tag: frame.tag)
                )
            default:
                send(exchange(frame) ?? .result(1, tag: frame.tag))
            }
        }
    }

    /// The serials upstream lists as `Network` entries already (macOS's usbmuxd lists Wi-Fi devices
    /// itself): those are not listed twice.
    static func networkSerials(_ list: [PlistValue]) -> Set<String> {
        Set(
            list.compactMap { entry -> String? in
                guard let properties = entry["Properties"], properties["ConnectionType"]?.string == "Network"
                else { return nil }
                return properties["SerialNumber"]?.string
            })
    }

    /// The serial number a `DeviceList` entry or an `Attached` event gives its device.
    static func serial(of entry: PlistValue) -> String? {
        entry["Properties"]?["SerialNumber"]?.string
    }

    /// The route of `others` that serves `udid`, if one does.
    static func owner(of udid: String, among others: [OtherUpstream]) -> String? {
        others.first { $0.udids.contains(udid) }?.address
    }

    /// A device entry or event with its DeviceIDs (the message's and its properties') moved by `offset`.
    static func remapped(_ entry: PlistValue, by offset: Int) -> PlistValue {
        guard var dictionary = entry.dictionary else { return entry }
        if let id = dictionary["DeviceID"]?.integer { dictionary["DeviceID"] = .integer(id + Int64(offset)) }
        if var properties = dictionary["Properties"]?.dictionary {
            if let id = properties["DeviceID"]?.integer {
                properties["DeviceID"] = .integer(id + Int64(offset))
            }
            dictionary["Properties"] = .dictionary(properties)
        }
        return .dictionary(dictionary)
    }

    private func send(_ frame: Frame) {
        _ = client.sendAll(frame.encoded)
    }

    enum Answer {
        /// No usbmuxd listens there (none runs here: the Wi-Fi devices are then the only ones).
        case unreachable
        case answered(Frame)
        /// It took the request and sent no whole frame back in time.
        case broken
    }

    private func ask(_ frame: Frame, at address: String? = nil) -> Answer {
        // The clients' own patience (libusbmuxd and pymobiledevice3 wait up to 30 s for an answer): a
        // busy usbmuxd is slow, not broken, and its record is not "missing".
        guard
            case .success(let socket) = ProbeSocket.open(address ?? upstream, timeout: Self.upstreamPatience)
        else {
            return .unreachable
        }
        guard socket.sendAll(frame.encoded), let answer = Self.read(socket) else { return .broken }
        return .answered(answer)
    }

    /// One request upstream (the route's, or `address`) and its one answer; nil when there is none.
    private func exchange(_ frame: Frame, at address: String? = nil) -> Frame? {
        if case .answered(let answer) = ask(frame, at: address) { return answer }
        return nil
    }

    private func listen(_ frame: Frame) {
        let others = relay.otherUpstreams
        var upstreamSocket: ProbeSocket?
        switch ProbeSocket.open(upstream, timeout: Self.upstreamPatience) {
        case .failure:
            break  // No usbmuxd here: the Wi-Fi devices (and the other routes') are all there is.
        case .success(let socket):
            guard socket.sendAll(frame.encoded), let answer = Self.read(socket),
                answer.dictionary?["Number"]?.integer == 0
            else {
                // A usbmuxd that refuses or answers wrongly is shown as it is, never hidden.
                guard others.isEmpty else { break }
                splice(sending: frame.encoded)
                return
            }
            upstreamSocket = socket
        }
        // Each other route's events, for its own devices only, under the relay's DeviceIDs.
        var feeds: [(socket: ProbeSocket, route: OtherUpstream?)] = upstreamSocket.map { [($0, nil)] } ?? []
        for other in others {
            guard case .success(let socket) = ProbeSocket.open(other.address, timeout: Self.upstreamPatience),
                socket.sendAll(frame.encoded), let answer = Self.read(socket),
                answer.dictionary?["Number"]?.integer == 0
            else { continue }
            feeds.append((socket, other))
        }
        send(.result(0, tag: frame.tag))
        for entry in relay.wifiEntries(excluding: []) { send(.plist(entry, tag: 0)) }
        relay.addListener(client)
        defer { relay.removeListener(client) }
        guard !feeds.isEmpty else {
            // The client only ever closes this connection.
            _ = client.receive(count: 1)
            return
        }
        // Each feed's events from now on, as it sends them; the lock keeps them whole between the
        // Wi-Fi events the relay writes and the other feeds'.
        let claimed = others.reduce(into: Set<String>()) { $0.formUnion($1.udids) }
        let done = DispatchSemaphore(value: 0)
        for feed in feeds {
            feed.socket.clearTimeouts()
            Thread { [client, relay] in
                var mine = Set<Int64>()
                while let event = Self.read(feed.socket) {
                    if others.isEmpty {
                        relay.write(event.encoded, toListener: client.fd)
                        continue
                    }
                    guard let body = event.dictionary, let id = body["DeviceID"]?.integer else { continue }
                    if body["MessageType"]?.string == "Attached",
                        let serial = Self.serial(of: .dictionary(body))
                    {
                        let passes = feed.route.map { $0.udids.contains(serial) } ?? !claimed.contains(serial)
                        if passes { mine.insert(id) } else { mine.remove(id) }
                    }
                    guard mine.contains(id) else { continue }
                    if body["MessageType"]?.string == "Detached" { mine.remove(id) }
                    let out =
                        feed.route.map { Self.remapped(.dictionary(body), by: $0.offset) }
                        ?? .dictionary(body)
                    relay.write(
                        Frame.plist(out.dictionary ?? [:], tag: event.tag).encoded, toListener: client.fd)
                }
                shutdown(client.fd, Int32(SHUT_RDWR))
                done.signal()
            }.start()
        }
        _ = client.receive(count: 1)
        for feed in feeds { shutdown(feed.socket.fd, Int32(SHUT_RDWR)) }
        for _ in feeds { done.wait() }
        withExtendedLifetime(feeds) {}
    }

    /// A `Connect`; true when the connection became a tunnel (or ended).
    private func connect(_ frame: Frame, _ request: [String: PlistValue]) -> Bool {
        let deviceID = Int(request["DeviceID"]?.integer ?? 0)
        for other in relay.otherUpstreams {
            guard let original = other.upstreamID(deviceID) else { continue }
            // Another route's device: its usbmuxd, under the DeviceID it gave.
            var changed = request
            changed["DeviceID"] = .integer(Int64(original))
            splice(sending: Frame.plist(changed, tag: frame.tag).encoded, to: other.address)
            return true
        }
        guard let device = relay.wifiDevice(id: deviceID) else {
            splice(sending: frame.encoded)
            return true
        }
        // PortNumber is the port in network byte order stored as a plain integer (PROTOCOL.md §1.7).
        let port = UInt16(truncatingIfNeeded: request["PortNumber"]?.integer ?? 0).byteSwapped
        guard case .success(let socket) = ProbeSocket.openTCP(host: device.address, port: port, timeout: 10)
        else {
            send(.result(3, tag: frame.tag))
            return false
        }
        send(.result(0, tag: frame.tag))
        socket.clearTimeouts()
        UsbmuxRelay.splice(client.fd, socket.fd)
        withExtendedLifetime(socket) {}
        return true
    }

    /// Sends `bytes` upstream (the route's, or `address`) and splices the rest of the connection both ways.
    private func splice(sending bytes: Data, to address: String? = nil) {
        guard case .success(let socket) = ProbeSocket.open(address ?? upstream, timeout: 5),
            socket.sendAll(bytes)
        else {
            return
        }
        socket.clearTimeouts()
        UsbmuxRelay.splice(client.fd, socket.fd)
        withExtendedLifetime(socket) {}
    }
}

extension UsbmuxFrame {
    /// A plist message, written by libplist (as every usbmuxd client's own library reads it).
    static func plist(_ value: [String: PlistValue], tag: UInt32) -> UsbmuxFrame {
        UsbmuxFrame(tag: tag, payload: PlistBridge.xml(.dictionary(value)) ?? Data())
    }

    /// The payload read by libplist, as a dictionary.
    var dictionary: [String: PlistValue]? {
        PlistBridge.parse(payload)?.dictionary
    }
}

/// Pair records hadeploy keeps itself (`<UDID>.plist`, owner-only, in a 0700 folder): what
/// `hadeploy pair` made over USB, for the runs that reach the device over Wi-Fi where no usbmuxd
/// keeps it (the system usbmuxd's /var/lib/lockdown is root's). The host's `SystemBUID` is made once.
public final class PairRecordFolder: @unchecked Sendable {
    public let folder: URL?
    private let fileSystem: (any FileSystem)?
    private let lock = NSLock()

    public init(folder: URL, fileSystem: any FileSystem) {
        self.folder = folder
        self.fileSystem = fileSystem
    }

    /// No folder: every record is upstream's.
    public static let none = PairRecordFolder()

    private init() {
        folder = nil
        fileSystem = nil
    }

    private func file(_ udid: String) -> URL? {
        guard let folder, !udid.isEmpty, !udid.contains("/"), !udid.hasPrefix(".") else { return nil }
        return folder.appendingPathComponent(udid + ".plist")
    }

    /// The largest record read: a real one is a few KiB (three PEM certificates, a key, some IDs).
    public static let largestRecord = 256 * 1024

    /// The record kept for `udid`: only a regular file (not a link) of this user, at most
    /// `largestRecord` bytes, that is a plist holding a pairing's HostID, certificates and host key;
    /// anything else is not a record (nil: the route's usbmuxd is asked instead).
    public func read(udid: String) -> Data? {
        guard let file = file(udid), let fileSystem, problem() == nil else { return nil }
        return lock.withLock { () -> Data? in
            guard let attributes = try? fileSystem.attributesOfItem(atPath: file.path),
                attributes[.type] as? FileAttributeType == .typeRegular,
                (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == UInt32(geteuid()),
                let size = (attributes[.size] as? NSNumber)?.intValue, size <= Self.largestRecord,
                let data = fileSystem.contents(atPath: file.path), data.count <= Self.largestRecord,
                Self.isRecord(data)
            else { return nil }
            return data
        }
    }

    /// Whether `data` is a pair record: a plist with HostID and the PEM certificates and key a
    /// pairing keeps.
    static func isRecord(_ data: Data) -> Bool {
        guard let fields = PlistBridge.parse(data)?.dictionary, fields["HostID"]?.string?.isEmpty == false
        else { return false }
        func pem(_ key: String, _ kind: String) -> Bool {
            fields[key]?.data.map { String(decoding: $0, as: UTF8.self).contains("-----BEGIN \(kind)") }
                == true
        }
        return pem("HostCertificate", "CERTIFICATE") && pem("DeviceCertificate", "CERTIFICATE")
            && pem("HostPrivateKey", "")
    }

    /// Why this folder may not be used (nil: it is fine, or not made yet): a records folder another
    /// user owns or can write could hold records (and keys) of theirs, or take this user's.
    public func problem() -> String? {
        guard let folder, let fileSystem else { return nil }
        guard let path = RealPath.of(folder.path) else { return nil }
        guard let attributes = try? fileSystem.attributesOfItem(atPath: path) else { return nil }
        guard attributes[.type] as? FileAttributeType == .typeDirectory else {
            return "the pair records folder \(folder.path) is not a folder"
        }
        let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value ?? UInt32.max
        guard owner == UInt32(geteuid()) else {
            return "the pair records folder \(folder.path) belongs to another user "
                + "(\(UsbmuxdSocketTrust.owner(uid_t(owner))))"
        }
        let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value ?? 0o777
        guard mode & 0o022 == 0 else {
            return "the pair records folder \(folder.path) can be changed by other users (mode "
                + String(mode & 0o7777, radix: 8) + ")"
        }
        return nil
    }

    /// Throws when `problem()` has one: a run, the muxer and `hadeploy pair` never use such a folder.
    public func requireUsable(step: String) throws {
        if let problem = problem() {
            throw MobileDeviceError(
                .hostIO, step: step, device: nil, reason: problem,
                nextStep: "Use a folder of your own that only you can change (chmod 700), or point "
                    + "HADEPLOY_PAIR_RECORDS at one.", isTransient: false)
        }
    }

    public func save(udid: String, record: Data) {
        guard let folder, let file = file(udid), let fileSystem, problem() == nil else { return }
        lock.withLock {
            try? fileSystem.createPrivateDirectory(at: folder)
            try? fileSystem.writePrivately(record, to: file)
        }
    }

    @discardableResult
    public func delete(udid: String) -> Bool {
        guard let file = file(udid), let fileSystem else { return false }
        return lock.withLock { (try? fileSystem.removeItem(at: file)) != nil }
    }

    /// The host's BUID for `ReadBUID` when no usbmuxd runs here: made once and kept in the folder.
    public var systemBUID: String {
        lock.withLock {
            guard let folder, let fileSystem else { return "00000000-0000-0000-0000-000000000000" }
            let file = folder.appendingPathComponent("SystemConfiguration.plist")
            if let data = fileSystem.contents(atPath: file.path),
                let buid = PlistBridge.parse(data)?["SystemBUID"]?.string
            {
                return buid
            }
            let buid = UUID().uuidString.uppercased()
            if let data = PlistBridge.xml(.dictionary(["SystemBUID": .string(buid)])) {
                try? fileSystem.createPrivateDirectory(at: folder)
                try? fileSystem.writePrivately(data, to: file)
            }
            return buid
        }
    }

    /// The Wi-Fi MAC address each kept record names (`WiFiMACAddress`), by UDID: how an mDNS
    /// announcement (`<MAC>@…`) is matched to a device without asking it.
    public func wifiMACAddresses() -> [String: String] {
        guard let folder, let fileSystem, let names = try? fileSystem.contentsOfDirectory(atPath: folder.path)
        else { return [:] }
        var found: [String: String] = [:]
        for name in names where name.hasSuffix(".plist") && name != "SystemConfiguration.plist" {
            let udid = String(name.dropLast(6))
            guard let data = read(udid: udid), let mac = Self.wifiMACAddress(inRecord: data) else { continue }
            found[udid] = mac
        }
        return found
    }

    static func wifiMACAddress(inRecord data: Data) -> String? {
        PlistBridge.parse(data)?["WiFiMACAddress"]?.string?.lowercased()
    }
}
