import Foundation
import HADeployCore
import HostCrypto
import Logging
import NIOConcurrencyHelpers
import NIOSSL

/// One emulated device: its persistent state, faults, service ports, and the app in the foreground.
///
/// Protocol code runs outside the actor (one task per connection) and calls in for state.
actor DeviceRuntime {
    nonisolated let profile: VirtualDeviceProfile
    nonisolated let paths: DevicePaths
    nonisolated let identity: DeviceIdentity
    nonisolated let model: VirtualDeviceProfile.Model?
    nonisolated let deviceKey: RSAPrivateKey
    /// `DevicePublicKey`: PKCS#1 PEM (`BEGIN RSA PUBLIC KEY`); SubjectPublicKeyInfo PEM makes
    /// libimobiledevice's pairing fail before `Pair` is sent (PROTOCOL.md §2.4).
    nonisolated let devicePublicKeyPEM: String
    nonisolated let pairRecords: PairRecordStore
    nonisolated let logger: Logger
    nonisolated let behaviour: any VirtualAppBehaviour
    /// Every file of the device (its state, uploads, installed apps, app containers).
    nonisolated let fileSystem: any FileSystem
    /// The link limiter every connection of this device shares (throttle fault).
    nonisolated let link: NIOLockedValueBox<LinkThrottle?>
    /// Notifications for notification_proxy observers.
    nonisolated let notifications = DeviceNotificationCenter()
    /// The system log syslog_relay streams.
    nonisolated let log: DeviceLog
    /// Faults, readable without hopping onto the actor (hot paths such as AFC writes).
    nonisolated let faultBox: NIOLockedValueBox<[VirtualFault]>
    /// Where a network twin listens (nil for a USB-only twin).
    nonisolated let network: NetworkEndpoint?

    private var state: DeviceState
    private var services: [UInt16: ServiceKind] = [:]
    private var nextPort: UInt16 = UInt16.random(in: 49_200...52_000)
    private var streams: [ObjectIdentifier: ByteStream] = [:]
    private var running: RunningApp?
    /// The TLS context and the pair record's DeviceCertificate it was made for (nil: none there).
    private var tlsContextCache: (record: Data?, context: NIOSSLContext)?
    private var launchCounter = 0
    /// How many times an app was launched since the device booted.
    private(set) var appLaunches = 0
    private(set) var lastUpload: VirtualUploadStatistics?
    /// Until when the user taps "Trust" for a host that asks to pair (`acceptNextPairing`).
    private var trustNextHostUntil: ContinuousClock.Instant?

    /// Fixed pids of the system daemons that write to the device log.
    static let springBoardPID = 57
    static let installdPID = 88
    static let reportCrashPID = 142

    struct RunningApp {
        let launchID: Int
        let pid: Int
        let app: VirtualInstalledApp
        let arguments: [String]
        let environment: [String]
        let context: VirtualAppContext
        let task: Task<Void, Never>
    }

    init(
        profile: VirtualDeviceProfile, stateDirectory: URL, pairRecords: PairRecordStore,
        behaviour: any VirtualAppBehaviour, logger baseLogger: Logger, fileSystem: any FileSystem
    ) throws {
        let paths = DevicePaths(stateDirectory: stateDirectory, name: profile.name)
        try paths.createAll(in: fileSystem)
        let model = VirtualDeviceProfile.models[profile.productType]
        var state: DeviceState
        if let data = fileSystem.contents(atPath: paths.stateFile.path),
            let decoded = try? JSONDecoder().decode(DeviceState.self, from: data)
        {
            state = decoded
            if let configured = profile.udid, !configured.isEmpty, configured != state.identity.udid {
                state.identity.udid = configured
            }
        } else {
            let chipID = model?.chipID ?? (profile.cpuArchitecture == "armv7" ? 0x8940 : 0x8020)
            state = DeviceState(identity: DeviceIdentity.makeUp(chipID: chipID, configuredUDID: profile.udid))
        }
        let key: RSAPrivateKey
        if let data = fileSystem.contents(atPath: paths.deviceKey.path),
            let pem = String(data: data, encoding: .utf8),
            let loaded = try? RSAPrivateKey(pem: pem)
        {
            key = loaded
        } else {
            key = try RSAPrivateKey(generatingBits: 2048)
            try fileSystem.writePrivately(Data(try key.pkcs1PEM.utf8), to: paths.deviceKey)
        }
        self.profile = profile
        self.paths = paths
        self.identity = state.identity
        self.model = model
        self.deviceKey = key
        self.devicePublicKeyPEM = try key.publicKey.pkcs1PEM
        self.pairRecords = pairRecords
        self.behaviour = behaviour
        self.fileSystem = fileSystem
        var logger = baseLogger
        logger[metadataKey: "device"] = "\(profile.name)"
        logger[metadataKey: "udid"] = "\(state.identity.udid)"
        self.logger = logger
        let throttleRate = profile.faults.compactMap { fault -> Int? in
            if case .throttle(let rate) = fault { return rate }
            return nil
        }.last
        self.link = NIOLockedValueBox(throttleRate.map { LinkThrottle(bytesPerSecond: $0) })
        self.faultBox = NIOLockedValueBox(profile.faults)
        self.log = DeviceLog(deviceName: profile.deviceName)
        self.network = profile.isOnNetwork ? NetworkEndpoint(configuredHost: profile.networkAddress) : nil
        if state.bootedAt == nil { state.bootedAt = EmulatorClock.now() }
        if profile.pairing == .prePaired && !state.prePairingDone {
            try Self.makePrePairedRecord(state: &state, deviceKey: key, pairRecords: pairRecords)
        }
        try Self.write(state, to: paths, in: fileSystem)
        self.state = state
    }

    /// Pre-paired mode: generate the host's pair record as if `idevicepair pair` had run long ago
    /// (PROTOCOL.md §2.10 mode 1), store it in the virtual usbmuxd and trust its HostID.
    private static func makePrePairedRecord(
        state: inout DeviceState, deviceKey: RSAPrivateKey, pairRecords: PairRecordStore
    ) throws {
        let material = try PairingCertificateFactory.makeMaterial(devicePublicKey: deviceKey.publicKey)
        let hostID = UUID().uuidString.uppercased()
        let record: [String: Any] = [
            "DeviceCertificate": Data(material.deviceCertificatePEM.utf8),
            "HostCertificate": Data(material.hostCertificatePEM.utf8),
            "HostPrivateKey": Data(material.hostPrivateKeyPEM.utf8),
            "RootCertificate": Data(material.rootCertificatePEM.utf8),
            "RootPrivateKey": Data(material.rootPrivateKeyPEM.utf8),
            "HostID": hostID,
            "SystemBUID": pairRecords.systemBUID,
            "WiFiMACAddress": state.identity.wifiAddress,
            "EscrowBag": state.escrowBag,
        ]
        try pairRecords.save(udid: state.identity.udid, record: try PropertyList.xml(record))
        state.trustedHosts.append(TrustedHost(hostID: hostID, systemBUID: pairRecords.systemBUID))
        state.prePairingDone = true
    }

    private static func write(_ state: DeviceState, to paths: DevicePaths, in fileSystem: any FileSystem)
        throws
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try fileSystem.writePrivately(encoder.encode(state), to: paths.stateFile)
    }

    private func persistLogging() {
        do { try Self.write(state, to: paths, in: fileSystem) } catch {
            logger.error("could not save device state: \(error)")
        }
    }

    // MARK: identity and lockdown values

    nonisolated var udid: String { identity.udid }

    var escrowBag: Data { state.escrowBag }
    var isDeveloperImageMounted: Bool { state.developerImageSignature != nil }
    var developerImageSignature: Data? { state.developerImageSignature }
    var bootCount: Int { state.bootCount }
    var bootedAt: Date { state.bootedAt ?? EmulatorClock.now() }
    var health: VirtualDeviceHealth { state.health ?? .plugged }

    func setHealth(_ health: VirtualDeviceHealth) {
        state.health = health
        persistLogging()
    }

    // MARK: faults

    /// Whether a one-shot fault of `kind` is set, removing it in the same step (two connections
    /// never both take it).
    nonisolated func takeFault(_ kind: String) -> Bool {
        faultBox.withLockedValue { faults in
            guard let index = faults.firstIndex(where: { $0.kind == kind }) else { return false }
            faults.remove(at: index)
            return true
        }
    }

    nonisolated func hasFault(_ kind: String) -> Bool {
        faultBox.withLockedValue { $0.contains { $0.kind == kind } }
    }

    nonisolated func isStalled(at point: VirtualStallPoint) -> Bool {
        faultBox.withLockedValue { $0.contains { $0 == .stall(at: point) } }
    }

    nonisolated func garbles(at point: VirtualStallPoint) -> Bool {
        faultBox.withLockedValue { $0.contains { $0 == .garble(at: point) } }
    }

    nonisolated func closesConnection(at point: VirtualStallPoint) -> Bool {
        faultBox.withLockedValue { $0.contains { $0 == .closeConnection(at: point) } }
    }

    nonisolated var uploadDropThreshold: Int? {
        faultBox.withLockedValue { faults in
            faults.compactMap { fault -> Int? in
                if case .dropUploadAfter(let bytes) = fault { return bytes }
                return nil
            }.min()
        }
    }

    nonisolated var installFailure: (error: String, description: String?)? {
        faultBox.withLockedValue { faults in
            for case .failInstall(let error, let description) in faults { return (error, description) }
            return nil
        }
    }

    nonisolated var faults: [VirtualFault] { faultBox.withLockedValue { $0 } }

    nonisolated var verificationDelay: Double? {
        faultBox.withLockedValue { faults in
            for case .slowVerification(let seconds) in faults { return seconds }
            return nil
        }
    }

    func inject(_ fault: VirtualFault) {
        faultBox.withLockedValue { faults in
            // One fault per kind: a new throttle rate replaces the old one.
            faults.removeAll { $0.kind == fault.kind }
            faults.append(fault)
        }
        if case .throttle(let rate) = fault {
            link.withLockedValue { $0 = LinkThrottle(bytesPerSecond: rate) }
        }
        logger.info("fault injected: \(fault)")
    }

    func clearFaults(kind: String? = nil) {
        faultBox.withLockedValue { faults in
            if let kind { faults.removeAll { $0.kind == kind } } else { faults.removeAll() }
        }
        if kind == nil || kind == "throttle" {
            link.withLockedValue { $0 = nil }
        }
        logger.info("faults cleared: \(kind ?? "all")")
    }

    // MARK: pairing

    func isTrusted(hostID: String) -> Bool {
        state.trustedHosts.contains { $0.hostID == hostID }
    }

    /// Whether a `Pair` from `hostID` is accepted: a host trusted already, any host while the profile
    /// pairs on first contact, or the next host once the user was told to trust it (one pairing).
    func mayPair(hostID: String) -> Bool {
        if isTrusted(hostID: hostID) || profile.pairing == .hostPairs { return true }
        guard let until = trustNextHostUntil, ContinuousClock.now < until else { return false }
        trustNextHostUntil = nil
        return true
    }

    /// The user will tap "Trust" on the next pairing dialog (within `window`).
    func acceptNextPairing(within window: Duration) {
        trustNextHostUntil = ContinuousClock.now + window
        logger.info("the next host to pair will be trusted")
    }

    func trust(hostID: String, systemBUID: String?) {
        state.trustedHosts.removeAll { $0.hostID == hostID }
        state.trustedHosts.append(TrustedHost(hostID: hostID, systemBUID: systemBUID))
        persistLogging()
        logger.info("paired with host \(hostID)")
    }

    /// Wi-Fi connections on: set over USB (SetValue), on for a twin that is on the network.
    var wifiConnections: Bool { state.wifiConnections ?? profile.isOnNetwork }

    func setWiFiConnections(_ enabled: Bool) {
        state.wifiConnections = enabled
        persistLogging()
        logger.info("Wi-Fi connections \(enabled ? "on" : "off")")
    }

    /// Settings › General › Transfer or Reset › Reset Location & Privacy: every host's trust is gone.
    func resetTrust() {
        state.trustedHosts.removeAll()
        persistLogging()
        logger.info("trust reset: no host is paired")
    }

    func forget(hostID: String) {
        state.trustedHosts.removeAll { $0.hostID == hostID }
        persistLogging()
        logger.info("unpaired host \(hostID)")
    }

    /// Lockdown sessions started since the device booted (each one a TLS handshake).
    private(set) var sessionsStarted = 0

    func countSession() {
        sessionsStarted += 1
    }

    /// Developer tunnels (CoreDeviceProxy handshakes) since the device booted.
    private(set) var tunnelsStarted = 0
    /// The streams carrying the tunnels open now, by handshake.
    private var tunnelStreams: [Int: ByteStream] = [:]

    /// Records a tunnel carried by `stream`; its number, to `endTunnel` when it closes.
    func beginTunnel(_ stream: ByteStream) -> Int {
        tunnelsStarted += 1
        tunnelStreams[tunnelsStarted] = stream
        return tunnelsStarted
    }

    func endTunnel(_ number: Int) {
        tunnelStreams[number] = nil
    }

    var openTunnels: Int { tunnelStreams.count }

    /// Set when a fault condemns the open tunnels: they are cut when the host next uses one.
    private var tunnelsCondemned = false

    func condemnTunnels() {
        tunnelsCondemned = true
    }

    /// Cuts the condemned tunnels, once: how many were cut, nil when none was condemned.
    func cutCondemnedTunnels() -> Int? {
        guard tunnelsCondemned else { return nil }
        tunnelsCondemned = false
        return dropTunnels()
    }

    /// Cuts every open tunnel's stream, as a cable moved from one port to another would: how many.
    func dropTunnels() -> Int {
        let open = tunnelStreams.values
        tunnelStreams.removeAll()
        for stream in open { stream.close() }
        return open.count
    }

    /// The server identity for lockdown/service TLS: the pair record's DeviceCertificate when it
    /// carries our key (what a real device presents), else a self-signed certificate for our key.
    /// Made once per pair record, not per session: reading the certificate and setting up
    /// BoringSSL's context cost about as much as the handshake's own RSA (perf, 24 twins).
    func tlsContext() throws -> NIOSSLContext {
        let recorded = pairRecords.deviceCertificate(udid: udid)
        if let cached = tlsContextCache, cached.record == recorded { return cached.context }
        var certificatePEM: String?
        if let data = recorded, let pem = String(data: data, encoding: .utf8),
            PairingCertificateFactory.certificate(pem, carries: deviceKey.publicKey)
        {
            certificatePEM = pem
        }
        if certificatePEM == nil {
            if let data = fileSystem.contents(atPath: paths.deviceCertificate.path),
                let pem = String(data: data, encoding: .utf8)
            {
                certificatePEM = pem
            } else {
                let pem = try PairingCertificateFactory.selfSignedDeviceCertificate(deviceKey: deviceKey)
                try fileSystem.write(Data(pem.utf8), to: paths.deviceCertificate)
                certificatePEM = pem
            }
        }
        let pem = certificatePEM!
        let certificate = try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem)
        let key = try NIOSSLPrivateKey(bytes: Array(try deviceKey.pkcs1PEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        // libimobiledevice caps TLS at 1.0 for ProductVersion < 10 (PROTOCOL.md §2.6).
        configuration.minimumTLSVersion = .tlsv1
        configuration.certificateVerification = .none
        let context = try NIOSSLContext(configuration: configuration)
        tlsContextCache = (recorded, context)
        return context
    }

    // MARK: services

    /// Opens a service port for `kind`; the client connects to it once through usbmuxd.
    func openService(_ kind: ServiceKind) -> UInt16 {
        nextPort = nextPort >= 60_000 ? 49_200 : nextPort + 1
        services[nextPort] = kind
        return nextPort
    }

    /// Takes the service waiting on `port` (each StartService port is good for one connection).
    func takeService(port: UInt16) -> ServiceKind? {
        services.removeValue(forKey: port)
    }

    func register(_ stream: ByteStream) {
        streams[ObjectIdentifier(stream)] = stream
    }

    func unregister(_ stream: ByteStream) {
        streams.removeValue(forKey: ObjectIdentifier(stream))
    }

    func recordUpload(_ statistics: VirtualUploadStatistics) {
        lastUpload = statistics
        logger.debug("upload of \(statistics.bytes) bytes in \(statistics.seconds) s")
    }

    // MARK: developer image

    func mountDeveloperImage(signature: Data) {
        state.developerImageSignature = signature
        persistLogging()
        logger.info("developer disk image mounted")
    }

    /// UnmountImage (iOS 14+): the developer services go away with the image.
    func unmountDeveloperImage() -> Bool {
        guard state.developerImageSignature != nil else { return false }
        state.developerImageSignature = nil
        persistLogging()
        logger.info("developer disk image unmounted")
        return true
    }

    // MARK: apps

    var installedApps: [VirtualInstalledApp] { state.installedApps }

    func app(bundleIdentifier: String) -> VirtualInstalledApp? {
        state.installedApps.first { $0.bundleIdentifier == bundleIdentifier }
    }

    func recordInstall(_ app: VirtualInstalledApp) {
        state.installedApps.removeAll { $0.bundleIdentifier == app.bundleIdentifier }
        state.installedApps.append(app)
        persistLogging()
        notifications.post("com.apple.mobile.application_installed")
        log.log(
            "Installed \(app.bundleIdentifier) (\(app.shortVersion ?? app.bundleVersion))",
            process: "installd",
            pid: Self.installdPID)
        logger.info("installed \(app.bundleIdentifier) \(app.bundleVersion)")
    }

    func recordUninstall(bundleIdentifier: String) -> Bool {
        guard state.installedApps.contains(where: { $0.bundleIdentifier == bundleIdentifier }) else {
            return false
        }
        state.installedApps.removeAll { $0.bundleIdentifier == bundleIdentifier }
        if running?.app.bundleIdentifier == bundleIdentifier { terminateRunningApp(reason: "uninstalled") }
        try? fileSystem.removeItem(at: paths.applications.appendingPathComponent(bundleIdentifier))
        // Uninstalling deletes the app's data, as on a device.
        let container = paths.dataContainer(bundleIdentifier)
        try? fileSystem.removeItem(at: container)
        try? fileSystem.removeItem(
            at: container.deletingLastPathComponent().appendingPathComponent(
                container.lastPathComponent + ".keychain.plist"))
        persistLogging()
        notifications.post("com.apple.mobile.application_uninstalled")
        log.log("Uninstalled \(bundleIdentifier)", process: "installd", pid: Self.installdPID)
        logger.info("uninstalled \(bundleIdentifier)")
        return true
    }

    // MARK: the foreground app

    /// Launches `app` (replacing any foreground app) and starts its behaviour.
    func launch(_ app: VirtualInstalledApp, arguments: [String], environment: [String]) -> VirtualAppContext {
        terminateRunningApp(reason: "replaced")
        launchCounter += 1
        appLaunches += 1
        let launch = appLaunch(app, arguments: arguments, environment: environment)
        // Launched processes get increasing pids above those of the system daemons.
        let pid = 300 + launchCounter
        let (log, executable) = (self.log, app.executable)
        let context = VirtualAppContext(
            initialScreen: VirtualScreen(title: app.displayName, lines: ["Starting..."]),
            fileSystem: fileSystem,
            console: { line in log.log(line, process: executable, pid: pid) })
        log.log(
            "Bootstrapping \(app.bundleIdentifier) with intent foreground-interactive",
            process: "SpringBoard",
            pid: Self.springBoardPID)
        let behaviour = self.behaviour
        let task = Task { await behaviour.run(launch, context: context) }
        running = RunningApp(
            launchID: launchCounter, pid: pid, app: app, arguments: arguments, environment: environment,
            context: context,
            task: task)
        logger.info("launched \(app.bundleIdentifier) with \(arguments.count - 1) argument(s)")
        return context
    }

    nonisolated func appLaunch(_ app: VirtualInstalledApp, arguments: [String], environment: [String])
        -> VirtualAppLaunch
    {
        let container = paths.dataContainer(app.bundleIdentifier)
        try? fileSystem.createDirectory(
            at: container.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        return VirtualAppLaunch(
            bundleIdentifier: app.bundleIdentifier, displayName: app.displayName,
            version: app.shortVersion ?? app.bundleVersion, build: app.bundleVersion,
            arguments: Array(arguments.dropFirst()), environment: environment,
            deviceName: profile.deviceName, udid: udid, productType: profile.productType,
            productVersion: profile.productVersion, dataContainer: container,
            sendsLoadedEvent: profile.appSendsLoadedEvent)
    }

    func terminateRunningApp(reason: String) {
        guard let running else { return }
        running.task.cancel()
        self.running = nil
        log.log(
            "Application \(running.app.bundleIdentifier) exited (\(reason))", process: "SpringBoard",
            pid: Self.springBoardPID)
        logger.info("app \(running.app.bundleIdentifier) terminated (\(reason))")
    }

    /// The foreground app's process, for the log relays' and debugserver's process lists.
    var runningProcess: (pid: Int, executable: String)? {
        running.map { ($0.pid, $0.app.executable) }
    }

    var runningApp: VirtualRunningApp? {
        guard let running else { return nil }
        return VirtualRunningApp(
            bundleIdentifier: running.app.bundleIdentifier, arguments: running.arguments,
            environment: running.environment, screen: running.context.screen)
    }

    /// What the screen shows: the foreground app, or the home screen.
    var screen: VirtualScreen {
        if let running { return running.context.screen }
        let apps = state.installedApps.map(\.displayName).sorted()
        return VirtualScreen(
            title: profile.deviceName,
            lines: ["iOS \(profile.productVersion) (\(profile.buildVersion))", profile.productType, ""]
                + (apps.isEmpty ? ["No apps installed"] : apps))
    }

    // MARK: crash reports

    /// Writes a crash report the way the device would after `app` crashed.
    func writeCrashReport(for app: VirtualInstalledApp, reason: String) throws -> String {
        launchCounter += 1
        let pid = 300 + launchCounter
        let report = try CrashReportWriter(profile: profile, udid: udid).report(
            for: app, reason: reason, pid: pid)
        try report.contents.write(
            to: paths.crashReports.appendingPathComponent(report.name), options: .atomic)
        log.log(
            "Formulating report for corpse[\(pid)] \(app.executable); saved \(report.name)",
            process: "ReportCrash",
            pid: Self.reportCrashPID, level: "Error")
        logger.info("crash report written: \(report.name)")
        return report.name
    }

    // MARK: reboot

    /// Drops every connection, kills the foreground app and forgets the mounted image, as a real
    /// reboot does (the Developer disk image does not survive it).
    func shutDown() {
        terminateRunningApp(reason: "reboot")
        state.developerImageSignature = nil
        state.bootCount += 1
        state.bootedAt = EmulatorClock.now()
        sessionsStarted = 0
        tunnelsStarted = 0
        appLaunches = 0
        tunnelStreams.removeAll()
        tunnelsCondemned = false
        services.removeAll()
        for stream in streams.values { stream.close() }
        streams.removeAll()
        persistLogging()
        logger.info("rebooting")
    }

    func closeAllConnections() {
        for stream in streams.values { stream.close() }
        streams.removeAll()
        terminateRunningApp(reason: "emulator stopped")
    }
}
