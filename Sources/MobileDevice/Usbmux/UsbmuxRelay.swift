import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one usbmuxd address libusbmuxd sees in this process: hadeploy's own relay on a private UNIX
/// socket, fixed the first time a route is chosen and never changed after. Which usbmuxd the relay
/// passes each new connection to — this machine's, the virtual twins', a USB host's tunnel — is a
/// value of the relay (`route(to:)`), read per connection: choosing a route never touches the
/// process's environment again.
///
/// libusbmuxd reads only `USBMUXD_SOCKET_ADDRESS` (PROTOCOL.md §1.1) and opens a new connection for
/// every request; the relay splices each one, byte for byte, to the route's usbmuxd, so what the
/// daemon answers (a device list, a pair record, a Connect tunnel, or garbage) reaches the client as
/// it was sent.
final class UsbmuxRelay: @unchecked Sendable {
    static let process = UsbmuxRelay()

    /// The default usbmuxd socket (libusbmuxd's own default).
    static let systemAddress = "UNIX:/var/run/usbmuxd"

    private let lock = NSLock()
    private var upstream = UsbmuxRelay.systemAddress
    private var listening: (fd: Int32, folder: String)?
    /// Whether a route was set (through the relay, or straight to what libusbmuxd reads anyway).
    private var routed = false
    /// Where the relay's private folder goes when it has to start after a direct route.
    private var relayFolders: [String] = []
    /// The Wi-Fi devices this relay lists itself, by the DeviceID it gave each (from 0x10000).
    private var wifi: [Int: WiFiDevice] = [:]
    private var nextWiFiID = 0x10000
    /// Serve every connection as a muxer, Wi-Fi devices or not (`hadeploy muxer`).
    private var alwaysMux = false
    /// The run's other usbmuxd routes (a USB host's tunnel, the twins'), muxed in beside the route's.
    private var others: [OtherUpstream] = []
    /// Where hadeploy keeps pair records of its own (`hadeploy pair`).
    private(set) var pairRecords = PairRecordFolder.none
    /// Open `Listen` connections, each with the lock that keeps its events whole.
    private var listeners: [Int32: NSLock] = [:]
    let discovery = WiFiDiscovery()

    /// Where new connections go now.
    var route: String { lock.withLock { upstream } }

    /// The relay's own address (`UNIX:/path`) once it runs: what a child process (pymobiledevice3)
    /// is pointed at, so it sees the Wi-Fi devices hadeploy lists too.
    var ownAddress: String? { lock.withLock { listening.map { "UNIX:" + $0.folder + "/usbmuxd" } } }

    /// The route, once one is set (nil: libusbmuxd still reads the environment as it was).
    var activeRoute: String? { lock.withLock { routed ? upstream : nil } }

    /// Relays every connection from now on to `address` (`UNIX:/path`, `/path` or `host:port`; nil:
    /// this machine's usbmuxd). The first call that needs it starts the relay and points libusbmuxd
    /// at it. A route to the very usbmuxd libusbmuxd reads already (`USBMUXD_SOCKET_ADDRESS` as it
    /// is, or the default) needs no relay until a Wi-Fi device or another route does
    /// (`startIfNeeded`): every byte of every connection, uploads included, then goes to the usbmuxd
    /// straight, not copied once more by this process. The relay's private folder is made in the
    /// first of `folders` short enough for a socket path (the run's state folder, then the temporary
    /// folder).
    ///
    /// `others`: the run's other usbmuxd routes, each with the UDIDs it serves (`OtherUpstream`); with
    /// any, the relay serves every connection as a muxer of them all. They replace the last call's.
    func route(to address: String?, others: [(address: String, udids: Set<String>)] = [], folders: [String])
        throws
    {
        let target = address.flatMap { $0.isEmpty ? nil : $0 } ?? Self.systemAddress
        try Self.checkTrusted(target, step: "usbmuxd route")
        for other in others { try Self.checkTrusted(other.address, step: "usbmuxd route") }
        // libusbmuxd reads the environment straight while no relay runs (a direct route).
        try Self.checkTrusted(Self.libusbmuxdAddress(), step: "USBMUXD_SOCKET_ADDRESS")
        try lock.withLock {
            upstream = target
            routed = true
            relayFolders = folders
            self.others = others.enumerated().map { index, other in
                OtherUpstream(address: other.address, udids: other.udids, offset: (index + 1) << 20)
            }
            if listening == nil && (target != Self.libusbmuxdAddress() || !others.isEmpty) {
                listening = try start(in: Self.base(folders))
            }
        }
    }

    /// The run's other routes now.
    var otherUpstreams: [OtherUpstream] { lock.withLock { others } }

    /// Starts the relay if a direct route left it off: a Wi-Fi device or a pairing needs hadeploy's
    /// own usbmuxd between libusbmuxd and the route's.
    func startIfNeeded() throws {
        try lock.withLock {
            if listening == nil { listening = try start(in: Self.base(relayFolders)) }
        }
    }

    /// Throws when the usbmuxd at `address` is not one this user may trust (`UsbmuxdSocketTrust`).
    static func checkTrusted(_ address: String, step: String) throws {
        // The relay's own socket: made by this process, in a folder of its own.
        if address == process.ownAddress { return }
        if let problem = UsbmuxdSocketTrust.problem(address) {
            throw UsbmuxdSocketTrust.refusal(address, problem, step: step)
        }
    }

    /// What libusbmuxd connects to in this process without the relay.
    static func libusbmuxdAddress() -> String {
        let value = getenv("USBMUXD_SOCKET_ADDRESS").map { String(cString: $0) } ?? ""
        return value.isEmpty ? systemAddress : value
    }

    /// sun_path holds 104 bytes on Darwin, 108 on Linux; the folder's name adds 24, the socket's 8,
    /// and binding it in a folder beside it first (`OwnerOnlySocket`) 4 more.
    private static func base(_ folders: [String]) -> String {
        folders.first { $0.utf8.count + 36 < 100 } ?? "/tmp"
    }

    /// Binds the private socket, starts accepting and sets `USBMUXD_SOCKET_ADDRESS` — once per process.
    private func start(in base: String) throws -> (fd: Int32, folder: String) {
        RelayCleanup.removeStale(in: base)
        var template = Array((base + "/hadeploy-usbmuxd.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Self.failure("a private folder for the usbmuxd relay", errno)
        }
        let folder = String(cString: made)
        chmod(folder, 0o700)
        let path = folder + "/usbmuxd"
        let fd = try Self.listener(at: path, what: "the usbmuxd relay")
        RelayCleanup.register(folder: folder, socket: path)
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "hadeploy usbmuxd relay"
        thread.start()
        // The only write of the variable, before this process first asks usbmuxd anything.
        setenv("USBMUXD_SOCKET_ADDRESS", "UNIX:" + path, 1)
        return (fd, folder)
    }

    private func acceptLoop(_ listener: Int32) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            SocketCalls.ignoreBrokenPipe(client)
            let (target, mux) = lock.withLock { (upstream, alwaysMux || !wifi.isEmpty || !others.isEmpty) }
            let thread = Thread { [self] in
                if mux {
                    UsbmuxMuxer(client: ProbeSocket(fd: client, timeout: 10), upstream: target, relay: self)
                        .serve()
                } else {
                    Self.relay(client, to: target)
                }
            }
            thread.start()
        }
    }

    /// Splices `client` to a new connection to `address`; a route that cannot be reached closes the
    /// client at once (libusbmuxd then says so, and the probes ask the route itself).
    static func relay(_ client: Int32, to address: String) {
        guard case .success(let upstream) = ProbeSocket.open(address, timeout: 5) else {
            close(client)
            return
        }
        upstream.clearTimeouts()
        let server = upstream.fd
        let answered = DispatchSemaphore(value: 0)
        Thread {
            pump(from: server, to: client)
            answered.signal()
        }.start()
        pump(from: client, to: server)
        // The client is done (libimobiledevice never half-closes): what the daemon still sends gets a
        // while, not forever.
        if answered.wait(timeout: .now() + 30) == .timedOut {
            shutdown(server, Int32(SHUT_RDWR))
            answered.wait()
        }
        close(client)
        withExtendedLifetime(upstream) {}
    }

    /// Splices two connected sockets both ways until both directions end (or one side fails).
    static func splice(_ first: Int32, _ second: Int32) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            pump(from: second, to: first)
            done.signal()
        }.start()
        pump(from: first, to: second)
        if done.wait(timeout: .now() + 30) == .timedOut {
            shutdown(second, Int32(SHUT_RDWR))
            done.wait()
        }
    }

    /// Copies until `source` ends, then ends `destination`'s writing side.
    static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        copying: while true {
            let got = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            var offset = 0
            while offset < got {
                let sent = buffer.withUnsafeBytes {
                    send(destination, $0.baseAddress! + offset, got - offset, SocketCalls.noSignalSendFlags)
                }
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { break copying }
                offset += sent
            }
        }
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }

    // MARK: the muxer's devices

    /// Lists these Wi-Fi devices from now on (a device already listed keeps its DeviceID; a new one
    /// is announced to every open `Listen`). `records` is where hadeploy's own pair records are.
    func add(_ devices: [WiFiDevice]) {
        var announced: [[String: PlistValue]] = []
        lock.withLock {
            for device in devices {
                if let (id, _) = wifi.first(where: { $0.value.udid == device.udid }) {
                    wifi[id] = device
                } else {
                    let id = nextWiFiID
                    nextWiFiID += 1
                    wifi[id] = device
                    announced.append(Self.attached(device, id: id))
                }
            }
        }
        for entry in announced {
            for listener in lock.withLock({ Array(listeners.keys) }) {
                write(UsbmuxFrame.plist(entry, tag: 0).encoded, toListener: listener)
            }
        }
    }

    /// The Wi-Fi devices listed now.
    var wifiDevices: [WiFiDevice] { lock.withLock { wifi.sorted { $0.key < $1.key }.map(\.value) } }

    func setPairRecords(_ folder: PairRecordFolder) {
        lock.withLock { pairRecords = folder }
    }

    func wifiDevice(id: Int) -> WiFiDevice? { lock.withLock { wifi[id] } }

    /// `Attached` messages for the Wi-Fi devices, but those upstream already lists by serial.
    func wifiEntries(excluding serials: Set<String>) -> [[String: PlistValue]] {
        lock.withLock {
            wifi.sorted { $0.key < $1.key }.filter { !serials.contains($0.value.udid) }.map {
                Self.attached($0.value, id: $0.key)
            }
        }
    }

    /// What Apple's usbmuxd lists for a Wi-Fi-synced device.
    static func attached(_ device: WiFiDevice, id: Int) -> [String: PlistValue] {
        let deviceID = PlistValue.integer(Int64(id))
        return [
            "DeviceID": deviceID, "MessageType": .string("Attached"),
            "Properties": .dictionary([
                "ConnectionType": .string("Network"), "DeviceID": deviceID,
                "EscapedFullServiceName": .string(
                    (device.wifiMACAddress ?? device.udid) + "._apple-mobdev2._tcp.local."),
                "InterfaceIndex": .integer(0), "NetworkAddress": .data(device.socketAddressData),
                "SerialNumber": .string(device.udid),
            ]),
        ]
    }

    func addListener(_ socket: ProbeSocket) { lock.withLock { listeners[socket.fd] = NSLock() } }
    func removeListener(_ socket: ProbeSocket) {
        _ = lock.withLock { listeners.removeValue(forKey: socket.fd) }
    }

    /// Writes one whole event to a `Listen` connection (the upstream's and the relay's never interleave).
    func write(_ bytes: Data, toListener fd: Int32) {
        guard let gate = lock.withLock({ listeners[fd] }) else { return }
        gate.withLock { _ = ProbeSocket.sendAll(bytes, to: fd) }
    }

    /// Serves every connection as a muxer from now on, Wi-Fi devices found or not.
    func muxAlways() throws {
        try startIfNeeded()
        lock.withLock { alwaysMux = true }
    }

    /// Serves hadeploy's usbmuxd at `path` as well (`hadeploy muxer --socket PATH`): owner-only, not
    /// this process's own route. Returns when the socket listens.
    func serve(
        at path: String, upstream address: String?, others: [(address: String, udids: Set<String>)] = []
    )
        throws
    {
        lock.withLock {
            alwaysMux = true
            upstream = address.flatMap { $0.isEmpty ? nil : $0 } ?? Self.systemAddress
            self.others = others.enumerated().map { index, other in
                OtherUpstream(address: other.address, udids: other.udids, offset: (index + 1) << 20)
            }
        }
        // A stale socket of an earlier muxer is replaced; a live one, or anything that is not a
        // socket, is left alone.
        try Self.checkTrusted(upstream, step: "hadeploy muxer --usbmuxd")
        for other in others { try Self.checkTrusted(other.address, step: "hadeploy muxer (a USB host)") }
        // Clients refuse a socket in a folder another user can change (`UsbmuxdSocketTrust`): so
        // does the muxer, before it serves one nobody would use.
        let folder = (path as NSString).deletingLastPathComponent
        if let problem = UsbmuxdSocketTrust.problem("UNIX:" + folder + "/.hadeploy-probe") {
            throw MobileDeviceError(
                .usbmuxdUnavailable, step: "hadeploy muxer", device: nil,
                reason: "\(path) would be in a folder clients refuse: \(problem)",
                nextStep: UsbmuxdSocketTrust.nextStep, isTransient: false)
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_uid == geteuid() || status.st_uid == 0 else {
                throw MobileDeviceError(
                    .usbmuxdUnavailable, step: "hadeploy muxer", device: nil,
                    reason: "\(path) belongs to another user (\(UsbmuxdSocketTrust.owner(status.st_uid))), "
                        + "who may serve a usbmuxd there: never use it",
                    nextStep: UsbmuxdSocketTrust.nextStep, isTransient: false)
            }
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw MobileDeviceError(
                    .usbmuxdUnavailable, step: "hadeploy muxer", device: nil,
                    reason: "\(path) exists and is not a socket (left as it is)",
                    nextStep: "Give --socket a path that does not exist yet.", isTransient: false)
            }
            if case .success = ProbeSocket.open("UNIX:" + path, timeout: 1) {
                throw MobileDeviceError(
                    .usbmuxdUnavailable, step: "hadeploy muxer", device: nil,
                    reason: "another usbmuxd of yours already serves \(path)",
                    nextStep: "Stop it, or give --socket another path.", isTransient: false)
            }
            unlink(path)
        }
        let fd = try Self.listener(at: path, what: "the muxer")
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "hadeploy usbmuxd"
        thread.start()
    }

    /// A listening UNIX socket at `path`, owner-only from its first moment (`OwnerOnlySocket`).
    static func listener(at path: String, what: String) throws -> Int32 {
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { throw failure("\(what)'s socket", errno) }
        let code = OwnerOnlySocket.bind(fd, at: path)
        guard code == 0 else {
            close(fd)
            if code == ENAMETOOLONG { throw failure("\(what)'s socket path (too long: \(path))", code) }
            throw failure("\(what) at \(path)", code)
        }
        guard listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            unlink(path)
            throw failure("\(what) at \(path)", code)
        }
        return fd
    }

    static func failure(_ what: String, _ code: Int32) -> MobileDeviceError {
        MobileDeviceError(
            .usbmuxdUnavailable, step: "usbmuxd relay", device: nil,
            reason: "could not set up \(what): \(String(cString: strerror(code)))",
            nextStep: "Check that the temporary folder (TMPDIR, else /tmp) is writable by this user.",
            isTransient: false)
    }
}

/// Removes the relay's socket and folder when the process exits normally.
enum RelayCleanup {
    nonisolated(unsafe) private static var paths: (folder: String, socket: String)?

    /// Removes the relay folders in `base` that a run killed before its exit handler left behind
    /// (SIGKILL, a crash): this user's own `hadeploy-usbmuxd.XXXXXX` folders holding only a socket
    /// that nobody listens on any more (connecting is refused). A folder whose socket answers, or
    /// that has no socket yet (a run binding it now), or anything else in it, is left alone.
    static func removeStale(in base: String) {
        guard let names = PlatformCalls.folderNames(base) else { return }
        for name in names
        where name.hasPrefix("hadeploy-usbmuxd.") && name.count == "hadeploy-usbmuxd.".count + 6 {
            let folder = base + "/" + name
            var info = stat()
            guard lstat(folder, &info) == 0, info.st_uid == getuid(),
                info.st_mode & S_IFMT == S_IFDIR,
                PlatformCalls.folderNames(folder) == ["usbmuxd"]
            else { continue }
            let socket = folder + "/usbmuxd"
            guard lstat(socket, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, refuses(socket) else {
                continue
            }
            unlink(socket)
            rmdir(folder)
        }
    }

    /// Whether connecting to the UNIX socket at `path` is refused: no process listens on it.
    static func refuses(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let result = OwnerOnlySocket.connect(fd, to: path) else { return false }
        return result != 0 && errno == ECONNREFUSED
    }

    static func register(folder: String, socket: String) {
        paths = (folder, socket)
        atexit {
            guard let paths = RelayCleanup.paths else { return }
            unlink(paths.socket)
            rmdir(paths.folder)
        }
    }
}

/// Another usbmuxd a run reaches in the same process (a second USB host's tunnel, the twins' beside
/// this machine's): only the devices of `udids` pass, listed under DeviceIDs of their own (the
/// upstream's plus `offset`, clear of every usbmuxd's and of the Wi-Fi devices' 0x10000 range), and
/// a `Connect` or a pair-record request for one of them goes to it.
struct OtherUpstream: Sendable {
    let address: String
    let udids: Set<String>
    let offset: Int

    /// The upstream's own DeviceID for `id`, when `id` is one of this upstream's.
    func upstreamID(_ id: Int) -> Int? {
        id >= offset && id < offset + (1 << 20) ? id - offset : nil
    }
}
