import CIMobileDevice
import Foundation

/// Owns a `lockdownd_client_t`: the device's port 62078, either plain (QueryType and the few
/// values a device gives before pairing) or after the full handshake (pair record, session, TLS).
/// lockdownd_client_free sends StopSession when a session is open (PROTOCOL.md §2.6): the handle
/// frees it on the worker while the device handle is still there. Use only on the device's worker.
final class LockdownClient: ServiceClient, @unchecked Sendable {
    static let label = "hadeploy"

    /// Connects to lockdownd. With `handshake`, pairs if there is no pair record yet (which shows the
    /// Trust dialog) and starts a TLS session (PROTOCOL.md §2.9).
    static func connect(_ device: DeviceHandle, identity: DeviceIdentity, handshake: Bool) throws
        -> LockdownClient
    {
        let step = handshake ? "lockdownd_client_new_with_handshake" : "lockdownd_client_new"
        let plain = try open(device, identity: identity, step: step, handshake: false)
        // lockdownd_client_new only logs a failed QueryType, and the next request then waits out
        // the library's 30 s receive timeout: check the answer here, where the caller's
        // `LockdownWatchdog` sees a failure or a wait.
        var type: UnsafeMutablePointer<CChar>?
        let result = lockdownd_query_type(plain.raw, &type)
        free(type)
        guard result == LOCKDOWN_E_SUCCESS else {
            let queryStep = handshake ? step : "lockdownd_query_type"
            // lockdownd always answers QueryType. No answer at all (the library's "unknown error")
            // is a connection that closed under it: a device re-enumerating on USB, a Wi-Fi hiccup,
            // usbmuxd dropping it. That is worth another try, not a re-pair.
            if result == LOCKDOWN_E_UNKNOWN_ERROR {
                throw MobileDeviceError(
                    .connectionLost, step: queryStep, device: identity,
                    reason: "lockdownd gave no answer to QueryType: the connection closed",
                    nextStep:
                        "Check the cable (or the usbmuxd host, or the Wi-Fi), unlock the device and try again.",
                    isTransient: true)
            }
            throw LockdownErrors.error(result, step: queryStep, device: identity)
        }
        guard handshake else { return plain }
        if try plain.startSession(step: step) { return plain }
        return try open(device, identity: identity, step: step, handshake: true)
    }

    private static func open(_ device: DeviceHandle, identity: DeviceIdentity, step: String, handshake: Bool)
        throws -> LockdownClient
    {
        let handle = try ClientHandle(
            device: device, success: LOCKDOWN_E_SUCCESS,
            make: {
                handshake
                    ? lockdownd_client_new_with_handshake(device.raw, $0, label)
                    : lockdownd_client_new(device.raw, $0, label)
            },
            failure: { LockdownErrors.error($0, step: step, device: identity) },
            release: { _ = lockdownd_client_free($0) })
        BlockingSends.restore(handle.raw, depth: 3, on: device)
        return LockdownClient(handle: handle, identity: identity)
    }

    /// The rest of the library's handshake (lockdown.c, `lockdownd_client_new_with_handshake`) for a
    /// paired device from iOS 7 on, with the session's TLS handshake on a blocking socket
    /// (`TLSHandshake`): the version the library keys TLS on, the pair record's HostID, StartSession.
    /// False, having sent nothing, where the library's own handshake must run instead: no pair
    /// record yet (it pairs), iOS before 7 (it validates the pairing first), a version or a record
    /// that cannot be read, or an `idevice_t` whose layout is not 1.3.0's.
    private func startSession(step: String) throws -> Bool {
        guard let text = (try? value(key: "ProductVersion"))??.string else { return false }
        let version = IOSVersion(text)
        guard version.major >= 7, device.recordVersion(version),
            let hostID = UsbmuxDirectory.pairRecordHostID(udid: device.udid)
        else { return false }
        let result = TLSHandshake.blocking(UnsafeRawPointer(raw), depth: 3) {
            lockdownd_start_session(raw, hostID, nil, nil)
        }
        guard result == LOCKDOWN_E_SUCCESS else {
            throw LockdownErrors.error(result, step: step, device: identity)
        }
        return true
    }

    /// One value (or, with no key, the whole domain as a dictionary). Nil when the device has none.
    func value(domain: String? = nil, key: String?) throws -> PlistValue? {
        var node: plist_t?
        let result = lockdownd_get_value(raw, domain, key, &node)
        if result == LOCKDOWN_E_MISSING_VALUE || result == LOCKDOWN_E_GET_PROHIBITED { return nil }
        guard result == LOCKDOWN_E_SUCCESS else {
            throw LockdownErrors.error(
                result, step: "lockdownd_get_value \(key ?? domain ?? "(all)")", device: identity)
        }
        return PlistBridge.take(node)
    }

    /// Asks lockdownd to start a service and returns where to connect to it.
    func startService(_ name: String) throws -> ServiceDescriptor {
        var descriptor: lockdownd_service_descriptor_t?
        let result = lockdownd_start_service(raw, name, &descriptor)
        guard result == LOCKDOWN_E_SUCCESS, let descriptor else {
            throw LockdownErrors.error(
                result, step: "lockdownd_start_service \(name)", device: identity, service: name)
        }
        return ServiceDescriptor(raw: descriptor, name: name, worker: device.worker)
    }

}

/// Owns a `lockdownd_service_descriptor_t` (port + whether the service runs TLS).
final class ServiceDescriptor: @unchecked Sendable {
    let raw: lockdownd_service_descriptor_t
    let name: String
    private let worker: DeviceWorker

    init(raw: lockdownd_service_descriptor_t, name: String, worker: DeviceWorker) {
        self.raw = raw
        self.name = name
        self.worker = worker
    }

    var usesTLS: Bool { raw.pointee.ssl_enabled != 0 }

    deinit {
        let raw = Unchecked(raw)
        worker.queue.async { lockdownd_service_descriptor_free(raw.value) }
    }
}
