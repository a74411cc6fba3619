import CIMobileDevice
import Foundation

/// Owns one `idevice_t` (a device as usbmuxd knows it right now) and the worker its calls run on.
/// Create and use only on `worker`; freed there too.
final class DeviceHandle: @unchecked Sendable {
    let raw: idevice_t
    let worker: DeviceWorker
    let udid: String
    /// Reached through its Network entry: libimobiledevice talks TCP to the device's address.
    let network: Bool

    private init(raw: idevice_t, worker: DeviceWorker, udid: String, network: Bool) {
        self.raw = raw
        self.worker = worker
        self.udid = udid
        self.network = network
    }

    /// Looks the device up in usbmuxd: its USB entry, as the Debian tools do without `-n`, or with
    /// `network` its Network entry (then every connection goes straight to the device's address).
    static func open(udid: String, worker: DeviceWorker, network: Bool) throws -> DeviceHandle {
        var device: idevice_t?
        // The network lookup through the shim: libimobiledevice 1.4.0 refuses a NetworkAddress in
        // the BSD layout (Apple's usbmuxd, the twin) on Linux, where 1.3.0 took it (shim.h).
        let result =
            network
            ? hadeploy_idevice_new_network(&device, udid)
            : idevice_new_with_options(&device, udid, IDEVICE_LOOKUP_USBMUX)
        guard result == IDEVICE_E_SUCCESS, let device else {
            if network {
                throw MobileDeviceError(
                    .notConnected, step: "idevice_new_with_options (network)", device: worker.device,
                    reason:
                        "not found on the network: usbmuxd at \(UsbmuxDirectory.address) does not list it as a "
                        + "Wi-Fi device (\(IDeviceErrors.name(result)))",
                    nextStep: MobileDeviceError.networkNextStep, isTransient: true)
            }
            throw MobileDeviceError(
                .notConnected, step: "idevice_new_with_options", device: worker.device,
                reason:
                    "usbmuxd at \(UsbmuxDirectory.address) does not list it (\(IDeviceErrors.name(result)))",
                nextStep:
                    "Plug the device in (or check the USB host it hangs on), unlock it, and run "
                    + "`idevice_id -l` to see what usbmuxd lists.",
                isTransient: true)
        }
        return DeviceHandle(raw: device, worker: worker, udid: udid, network: network)
    }

    /// Records the iOS version in the `idevice_t` as `lockdownd_client_new_with_handshake` does: the
    /// library caps TLS at 1.0 for a device whose recorded version is below 10 (idevice.c), and only
    /// its own handshake records it. 1.3.0 has no call for this, so it follows the private layout
    /// (idevice.h: `char *udid; uint32_t mux_id; enum conn_type; void *conn_data; int version`),
    /// checked first against what the public calls report; false where it does not match.
    func recordVersion(_ version: IOSVersion) -> Bool {
        let base = UnsafeMutableRawPointer(raw)
        let pointer = MemoryLayout<UnsafeRawPointer>.size
        var handle: UInt32 = 0
        guard let udidField = base.load(as: UnsafePointer<CChar>?.self), String(cString: udidField) == udid,
            idevice_get_handle(raw, &handle) == IDEVICE_E_SUCCESS,
            base.load(fromByteOffset: pointer, as: UInt32.self) == handle,
            [CONNECTION_USBMUXD.rawValue, CONNECTION_NETWORK.rawValue].contains(
                base.load(fromByteOffset: pointer + 4, as: UInt32.self))
        else { return false }
        let offset = 2 * pointer + 8
        guard base.load(fromByteOffset: offset, as: Int32.self) == 0 else { return true }
        let parts = version.components + [0, 0, 0]
        let packed = (parts[0] & 0xFF) << 16 | (parts[1] & 0xFF) << 8 | (parts[2] & 0xFF)
        base.storeBytes(of: Int32(packed), toByteOffset: offset, as: Int32.self)
        return true
    }

    deinit {
        let raw = Unchecked(raw)
        worker.queue.async { idevice_free(raw.value) }
    }
}

/// Names for `idevice_error_t` values.
enum IDeviceErrors {
    static func name(_ code: idevice_error_t) -> String {
        switch code {
        case IDEVICE_E_SUCCESS: return "success"
        case IDEVICE_E_INVALID_ARG: return "invalid argument (-1)"
        case IDEVICE_E_NO_DEVICE: return "no such device (-3)"
        case IDEVICE_E_NOT_ENOUGH_DATA: return "not enough data (-4)"
        case IDEVICE_E_SSL_ERROR: return "SSL error (-6)"
        case IDEVICE_E_TIMEOUT: return "timeout (-7)"
        default: return "unknown error (\(code.rawValue))"
        }
    }
}
