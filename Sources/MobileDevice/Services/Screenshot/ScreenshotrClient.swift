import CIMobileDevice
import Foundation

/// Owns a `screenshotr_client_t` (DeviceLink version exchange done by the library, PROTOCOL.md §5).
/// Use only on the device's worker.
final class ScreenshotrClient: ServiceClient, @unchecked Sendable {

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        try super.init(
            device: device, descriptor: descriptor, identity: identity, success: SCREENSHOTR_E_SUCCESS,
            new: screenshotr_client_new,
            connectionDepth: 4,
            failure: { ScreenshotrClient.error($0, step: "screenshotr_client_new", identity: identity) },
            release: { _ = screenshotr_client_free($0) })
    }

    /// The screen as the device encodes it (TIFF up to iOS 8, PNG later).
    func take() throws -> Data {
        var bytes: UnsafeMutablePointer<CChar>?
        var size: UInt64 = 0
        let result = screenshotr_take_screenshot(raw, &bytes, &size)
        defer { if let bytes { free(bytes) } }
        guard result == SCREENSHOTR_E_SUCCESS, let bytes, size > 0 else {
            throw Self.error(result, step: "screenshotr_take_screenshot", identity: identity)
        }
        return Data(bytes: bytes, count: Int(size))
    }

    static func error(_ code: screenshotr_error_t, step: String, identity: DeviceIdentity)
        -> MobileDeviceError
    {
        switch code {
        case SCREENSHOTR_E_BAD_VERSION:
            return MobileDeviceError(
                .unsupportedOnThisIOS, step: step, device: identity,
                reason:
                    "the device speaks a screenshotr DeviceLink version newer than libimobiledevice 1.3.0 knows",
                nextStep: "Use the pymobiledevice3 backend for screenshots of this device.")
        case SCREENSHOTR_E_SUCCESS:
            return MobileDeviceError(
                .protocolError, step: step, device: identity, reason: "the device sent an empty screenshot",
                nextStep: "Unlock the device and retry.", isTransient: true)
        default:
            return MobileDeviceError.connectionBroke(
                step: step, device: identity,
                reason: "the screenshotr connection failed (error \(code.rawValue))")
        }
    }
}
