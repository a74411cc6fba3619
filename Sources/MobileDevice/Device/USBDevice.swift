import Foundation
import HADeployCore
import Logging

/// One device reached through usbmuxd. Operations run one at a time per device, with a deadline on
/// every step. They share one lockdown session (`openLockdown`) while the device keeps it: a deploy's
/// steps (connect, mount, install, launch, crash check) start their services on the session the
/// connect step opened, one TLS handshake per device instead of one per step, as a real device
/// allows (StartService any number of times per session). A session the device dropped, a step
/// that failed, or a mount (which changes the services on offer) ends it; the next step opens a
/// fresh connection (new `idevice_t`), so a device that rebooted or was replugged is found again.
public actor USBDevice {
    public private(set) var info: USBDeviceInfo
    public let options: USBDeviceOptions
    let gate = SerialGate()
    var logger: Logger
    let records: InstallRecordStore
    /// The lockdown session the next step may reuse (see `openLockdown`).
    private var kept: (DeviceSession, LockdownClient)?

    init(info: USBDeviceInfo, options: USBDeviceOptions, session: (DeviceSession, LockdownClient)? = nil) {
        self.kept = session
        self.info = info
        self.udid = info.identity.udid
        self.options = options
        var logger = options.logger
        logger[metadataKey: "device"] = "\(info.identity.name ?? "?")"
        logger[metadataKey: "udid"] = "\(info.identity.udid)"
        self.logger = logger
        self.records = InstallRecordStore(fileSystem: options.fileSystem, directory: options.stateDirectory)
    }

    public nonisolated let udid: String

    var identity: DeviceIdentity { info.identity }
    var timeouts: USBTimeouts { options.timeouts }
    nonisolated var fileSystem: any FileSystem { options.fileSystem }

    /// Reads the device's identity again (name, iOS version after an update, Developer Mode).
    public func refreshInfo() async throws -> USBDeviceInfo {
        try await serialized {
            let session = try await openSession()
            let lockdown = try await session.lockdown(handshake: true, timeouts: timeouts)
            info = try await Self.readInfo(lockdown: lockdown, session: session, timeouts: timeouts)
            return info
        }
    }

    // MARK: plumbing shared by the capabilities

    func serialized<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await gate.acquire()
        do {
            let result = try await body()
            await gate.release()
            return result
        } catch let error as MobileDeviceError {
            endSession()
            await gate.release()
            throw options.network ? error.on(identity).overNetwork() : error.on(identity)
        } catch {
            endSession()
            await gate.release()
            throw error
        }
    }

    /// A fresh connection; waits for the device to come back when usbmuxd does not list it (reboot,
    /// replug), up to `timeouts.reattach`.
    func openSession() async throws -> DeviceSession {
        let network = options.network
        do {
            return try await DeviceSession.open(
                identity: identity, timeouts: timeouts, network: network, clock: options.clock)
        } catch let error as MobileDeviceError where error.kind == .notConnected {
            logger.info("device not listed by usbmuxd; waiting up to \(timeouts.reattach.secondsText) for it")
            try await USBTransport.waitUntilListed(
                udid: udid, deadline: options.clock.deadline(after: timeouts.reattach), timeouts: timeouts,
                device: identity, network: network, clock: options.clock)
            return try await DeviceSession.open(
                identity: identity, timeouts: timeouts, network: network, clock: options.clock)
        }
    }

    /// A session with a completed handshake: the kept one while the device still answers on it
    /// (one GetValue, bounded by `timeouts.keptSession`), else a new one, which is kept for the next step.
    func openLockdown() async throws -> (DeviceSession, LockdownClient) {
        if let kept, await Self.answers(kept, within: min(timeouts.request, timeouts.keptSession)) {
            return kept
        }
        endSession()
        let session = try await openSession()
        let open = (session, try await session.lockdown(handshake: true, timeouts: timeouts))
        kept = open
        return open
    }

    /// Lets go of the kept lockdown session (freeing it sends StopSession); the next step opens its own.
    func endSession() {
        kept = nil
    }

    /// Whether lockdownd still answers on this session (a device closes sessions it considers idle,
    /// and a reboot or replug ends them). Never throws: any failure means "open a new one".
    private static func answers(_ open: (DeviceSession, LockdownClient), within budget: Duration) async
        -> Bool
    {
        let (session, lockdown) = open
        guard session.worker.abandonedStep == nil else { return false }
        let version = try? await session.run("lockdownd_get_value ProductVersion", within: budget) {
            try lockdown.value(key: "ProductVersion")?.string
        }
        return version != nil
    }

    /// `open` when given, else a new session with a completed handshake.
    func openLockdown(reusing open: (DeviceSession, LockdownClient)?) async throws -> (
        DeviceSession, LockdownClient
    ) {
        if let open { return open }
        return try await openLockdown()
    }

    static func readInfo(lockdown: LockdownClient, session: DeviceSession, timeouts: USBTimeouts) async throws
        -> USBDeviceInfo
    {
        let values = try await session.run("lockdownd_get_value (all)", within: timeouts.request) {
            () -> [String: PlistValue] in
            var all = try lockdown.value(key: nil)?.dictionary ?? [:]
            if let mode = try? lockdown.value(
                domain: "com.apple.security.mac.amfi", key: "DeveloperModeStatus")
            {
                all["DeveloperModeStatus"] = mode
            }
            return all
        }
        let old = session.identity
        let identity = DeviceIdentity(name: values["DeviceName"]?.string ?? old.name, udid: old.udid)
        guard let version = values["ProductVersion"]?.string else {
            throw MobileDeviceError(
                .protocolError, step: "lockdownd_get_value ProductVersion", device: identity,
                reason: "lockdownd did not report an iOS version",
                nextStep: "Unlock the device and retry; replug it if it persists.", isTransient: true)
        }
        return USBDeviceInfo(
            identity: identity, productType: values["ProductType"]?.string ?? "",
            productVersion: IOSVersion(version), buildVersion: values["BuildVersion"]?.string ?? "",
            cpuArchitecture: values["CPUArchitecture"]?.string ?? "",
            deviceClass: values["DeviceClass"]?.string ?? "",
            hardwareModel: values["HardwareModel"]?.string ?? "",
            developerModeEnabled: values["DeveloperModeStatus"]?.bool)
    }

    /// libimobiledevice 1.3.0 reaches developer services only up to iOS 16 (PROTOCOL.md §11).
    func requireLegacyDeveloperServices(for capability: String) throws {
        guard info.productVersion.major >= 17 else { return }
        throw MobileDeviceError(
            .unsupportedOnThisIOS, step: capability, device: identity,
            reason:
                "\(capability) on iOS \(info.productVersion) needs the iOS 17 developer tunnel "
                + "(RemoteXPC and a personalized Developer Disk Image), which libimobiledevice 1.3.0 cannot do",
            nextStep:
                "Use the devicectl backend (macOS, Xcode 15+) or the pymobiledevice3 backend for this device; "
                + "install and uninstall still work over USB.")
    }
}
