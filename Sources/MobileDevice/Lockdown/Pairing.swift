import CIMobileDevice
import Foundation
import HADeployCore

/// What `hadeploy pair` did: the device, its Wi-Fi MAC address (how it is known over mDNS), and the
/// pair record kept.
public struct PairingResult: Sendable {
    public let udid: String
    public let name: String?
    public let wifiMACAddress: String?
    /// The record as saved (PropertyList): the host's keys are in it — write it owner-only.
    public let record: Data?
    /// `EnableWifiConnections` read back after setting it.
    public let wifiConnections: Bool
}

extension USBTransport {
    /// Pairs with the USB device `udid` as Finder does (PROTOCOL.md §2.5) and turns on its Wi-Fi
    /// connections (`EnableWifiConnections` in com.apple.mobile.wireless_lockdown, Finder's "Show this
    /// iPad when on Wi-Fi"). The record libimobiledevice makes is saved through hadeploy's usbmuxd
    /// into `pairRecords` (and into the route's usbmuxd, as ever). While the device shows "Trust This
    /// Computer?" (or is locked) `waiting` is told once what to do, and the pairing is asked again
    /// each second until `trustWait` runs out. Set the route first.
    public static func pair(
        udid: String, pairRecords: URL, fileSystem: any FileSystem, trustWait: Duration,
        timeouts: USBTimeouts = USBTimeouts(), clock: any WallClock, waiting: @Sendable (String) -> Void
    ) async throws -> PairingResult {
        let relay = UsbmuxRelay.process
        let records = PairRecordFolder(folder: pairRecords, fileSystem: fileSystem)
        try records.requireUsable(step: "hadeploy pair")
        relay.setPairRecords(records)
        // Every request read, so the SavePairRecord that lockdownd_pair sends is kept here too.
        try relay.muxAlways()
        let anonymous = DeviceIdentity(name: nil, udid: udid)
        try await waitUntilListed(
            udid: udid, deadline: clock.deadline(after: timeouts.usbmuxd), timeouts: timeouts,
            device: anonymous,
            network: false, clock: clock)
        let session = try await DeviceSession.open(
            identity: anonymous, timeouts: timeouts, network: false, clock: clock)
        let plain = try await session.lockdown(handshake: false, timeouts: timeouts)
        let name = try? await session.run("lockdownd_get_value DeviceName", within: timeouts.request) {
            try plain.value(key: "DeviceName")?.string
        }
        let identity = DeviceIdentity(name: name ?? nil, udid: udid)
        let deadline = clock.deadline(after: trustWait)
        var told: Set<String> = []
        while true {
            let code = try await session.run("lockdownd_pair", within: timeouts.handshake) {
                lockdownd_pair(plain.raw, nil)
            }
            if code == LOCKDOWN_E_SUCCESS { break }
            let error = LockdownErrors.error(code, step: "lockdownd_pair", device: identity)
            let wait: String
            switch error.kind {
            case .trustPending:
                wait = "tap Trust on \(identity) (\"Trust This Computer?\") and enter its passcode if asked"
            case .passcodeLocked:
                wait = "unlock \(identity): it asks to trust this computer only when unlocked"
            default:
                throw error
            }
            guard clock.instant() < deadline else {
                throw MobileDeviceError(
                    error.kind, step: "lockdownd_pair", device: identity,
                    reason: "nobody answered on the device within \(trustWait) (\(error.reason))",
                    nextStep: "Unlock it, run `hadeploy pair` again and tap Trust when it asks.",
                    isTransient: true)
            }
            if told.insert(wait).inserted { waiting("waiting: " + wait) }
            try await clock.sleep(for: .seconds(1))
        }
        // Finder's "Show this iPad when on Wi-Fi": in a session, with the record just made.
        let paired = try await DeviceSession.open(
            identity: identity, timeouts: timeouts, network: false, clock: clock)
        let lockdown = try await paired.lockdown(handshake: true, timeouts: timeouts)
        let domain = "com.apple.mobile.wireless_lockdown"
        let enabled = try await paired.run(
            "lockdownd_set_value EnableWifiConnections", within: timeouts.request
        ) {
            let result = lockdownd_set_value(lockdown.raw, domain, "EnableWifiConnections", plist_new_bool(1))
            guard result == LOCKDOWN_E_SUCCESS else {
                throw LockdownErrors.error(
                    result, step: "lockdownd_set_value EnableWifiConnections", device: identity)
            }
            if case .bool(let value)? = try lockdown.value(domain: domain, key: "EnableWifiConnections") {
                return value
            }
            return false
        }
        let record = relay.pairRecords.read(udid: udid)
        return PairingResult(
            udid: udid, name: identity.name,
            wifiMACAddress: record.flatMap(PairRecordFolder.wifiMACAddress(inRecord:)),
            record: record, wifiConnections: enabled)
    }
}
