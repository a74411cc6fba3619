import Foundation

extension USBDevice {
    static let screenshotService = "com.apple.mobile.screenshotr"

    /// The screen as PNG (older devices send TIFF; it is converted). Mounts the Developer Disk
    /// Image first when the device needs it.
    public func screenshotPNG() async throws -> Data {
        try requireLegacyDeveloperServices(for: "Screenshots")
        return try await serialized {
            let (session, _, descriptor) = try await startDeveloperService([Self.screenshotService])
            let raw = try await session.run("screenshotr_take_screenshot", within: timeouts.request) {
                let client = try ScreenshotrClient(
                    device: session.handle, descriptor: descriptor, identity: session.identity)
                return try client.take()
            }
            return try await Self.offPool { [identity] in
                try ScreenshotConverter.png(from: raw, device: identity)
            }
        }
    }
}
