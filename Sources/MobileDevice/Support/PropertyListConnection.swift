import CIMobileDevice
import CPlist
import Foundation

/// Owns a `property_list_service_client_t`: a service connection framed as 4-byte big-endian
/// length + plist (PROTOCOL.md §2.1). installation_proxy runs on it; using it directly instead of
/// `instproxy_install` keeps every receive on our worker with a timeout, because the library's
/// asynchronous status thread ends silently when the connection drops (installation_proxy.c).
/// Use only on the device's worker.
final class PropertyListConnection: ServiceClient, @unchecked Sendable {
    let service: String

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        self.service = descriptor.name
        try super.init(
            device: device, descriptor: descriptor, identity: identity,
            success: PROPERTY_LIST_SERVICE_E_SUCCESS,
            new: property_list_service_client_new,
            connectionDepth: 2,
            failure: {
                PropertyListConnection.error(
                    $0, step: "property_list_service_client_new (\(descriptor.name))", identity: identity)
            },
            release: { _ = property_list_service_client_free($0) })
    }

    func send(_ message: PlistValue, step: String) throws {
        let result = PlistBridge.withNode(message) { node in
            property_list_service_send_xml_plist(raw, node)
        }
        guard result == PROPERTY_LIST_SERVICE_E_SUCCESS else {
            throw Self.error(result, step: step, identity: identity)
        }
    }

    /// The next message, or nil when none arrived within `timeoutMilliseconds`.
    func receive(timeoutMilliseconds: UInt32, step: String) throws -> PlistValue? {
        var node: plist_t?
        let result = property_list_service_receive_plist_with_timeout(raw, &node, timeoutMilliseconds)
        if result == PROPERTY_LIST_SERVICE_E_RECEIVE_TIMEOUT {
            if let node { plist_free(node) }
            // libusbmuxd reports a socket closed by the other end (recv returning 0) as EAGAIN, which
            // reads as "nothing yet": without this check a killed usbmuxd or a pulled cable looks
            // like a slow device until the step's deadline.
            if ConnectionLiveness.peerClosed(raw) { throw lost(step) }
            return nil
        }
        if result == PROPERTY_LIST_SERVICE_E_UNKNOWN_ERROR, handle.device.network,
            ConnectionLiveness.isQuiet(raw)
        {
            // Over Wi-Fi, 1.3.0 reports a receive timeout this way (ConnectionLiveness.isQuiet).
            if let node { plist_free(node) }
            return nil
        }
        guard result == PROPERTY_LIST_SERVICE_E_SUCCESS else {
            if let node { plist_free(node) }
            if result != PROPERTY_LIST_SERVICE_E_PLIST_ERROR, ConnectionLiveness.peerClosed(raw) {
                throw lost(step)
            }
            throw Self.error(result, step: step, identity: identity)
        }
        return PlistBridge.take(node)
    }

    /// The socket to usbmuxd closed under us: said at once, not as a deadline blamed on a slow link.
    private func lost(_ step: String) -> MobileDeviceError {
        MobileDeviceError(
            .connectionLost, step: step, device: identity,
            reason: "connection to usbmuxd lost: the socket was closed by the other end "
                + "(usbmuxd stopped or restarted, or the device was unplugged)",
            nextStep:
                "Check that usbmuxd is running (\(PlatformCalls.usbmuxdStatusCommand)) and the device is connected, "
                + "then retry.",
            isTransient: true)
    }

    static func error(_ code: property_list_service_error_t, step: String, identity: DeviceIdentity)
        -> MobileDeviceError
    {
        switch code {
        case PROPERTY_LIST_SERVICE_E_PLIST_ERROR:
            return MobileDeviceError(
                .protocolError, step: step, device: identity,
                reason: "the device sent a malformed property list",
                nextStep: "Replug the device and retry.")
        default:
            return MobileDeviceError(
                .connectionLost, step: step, device: identity,
                reason: "the service connection broke (property_list_service error \(code.rawValue))",
                nextStep: "Check the cable (or the usbmuxd host), keep the device unlocked, and retry.",
                isTransient: true)
        }
    }
}
