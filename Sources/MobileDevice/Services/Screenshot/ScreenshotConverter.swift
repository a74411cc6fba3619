import Foundation
import ImageCodec

/// PNG passes through; TIFF (iOS ≤ 8, libimobiledevice issue #338) is re-encoded as PNG with
/// libtiff/libpng.
enum ScreenshotConverter {
    static func png(from data: Data, device: DeviceIdentity) throws -> Data {
        do {
            return try ImageCodec.pngData(fromScreenshot: data)
        } catch {
            throw MobileDeviceError(
                .protocolError, step: "convert screenshot to PNG", device: device,
                reason: "the \(data.count) bytes the device sent are not a readable PNG or TIFF (\(error))",
                nextStep: "Unlock the device and take the screenshot again.", isTransient: true)
        }
    }
}
