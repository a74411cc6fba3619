import Foundation
import ImageCodec

/// Draws a device's screen state into a real image, so a screenshot proves what the device shows.
enum ScreenRenderer {
    static let springboardBackground = RGBImage.Color(red: 0x1E, green: 0x3A, blue: 0x5F)
    static let appBackground = RGBImage.Color(red: 0xFA, green: 0xFA, blue: 0xFA)
    /// Home Assistant's primary blue, used for the app header.
    static let headerColor = RGBImage.Color(red: 0x03, green: 0xA9, blue: 0xF4)
    static let errorColor = RGBImage.Color(red: 0xDB, green: 0x44, blue: 0x37)
    static let statusBarColor = RGBImage.Color.black
    static let textColor = RGBImage.Color(red: 0x21, green: 0x21, blue: 0x21)

    /// The encoded screenshot the device sends (PNG or TIFF by firmware).
    static func screenshot(of runtime: DeviceRuntime) async throws -> Data {
        let screen = await runtime.screen
        let isHome = await runtime.runningApp == nil
        let profile = runtime.profile
        return try await Offload.run {
            let image = render(screen, isHomeScreen: isHome, profile: profile)
            return try ImageCodec.encode(image, as: profile.effectiveScreenshotFormat)
        }
    }

    /// Text scale: about 30 characters per line whatever the resolution.
    static func scale(forWidth width: Int) -> Int { max(2, width / 180) }

    static func render(_ screen: VirtualScreen, isHomeScreen: Bool, profile: VirtualDeviceProfile) -> RGBImage
    {
        let width = profile.screenWidth
        let height = profile.screenHeight
        let scale = scale(forWidth: width)
        let lineHeight = (BitmapFont.glyphHeight + 4) * scale
        let margin = 4 * scale
        var image = RGBImage(
            width: width, height: height, fill: isHomeScreen ? springboardBackground : appBackground)
        var y = 0
        if !screen.kiosk {
            // Status bar: carrier/device class on the left, battery on the right.
            let barHeight = lineHeight + 2 * scale
            image.fill(x: 0, y: 0, width: width, height: barHeight, color: statusBarColor)
            draw(profile.deviceClass, into: &image, x: margin, y: 3 * scale, scale: scale, color: .white)
            let battery = "100%"
            draw(
                battery, into: &image, x: width - margin - textWidth(battery, scale: scale), y: 3 * scale,
                scale: scale, color: .white)
            y = barHeight
            if !isHomeScreen {
                let headerHeight = lineHeight * 2
                image.fill(x: 0, y: y, width: width, height: headerHeight, color: headerColor)
                draw(
                    screen.title, into: &image, x: margin, y: y + lineHeight / 2 + scale, scale: scale,
                    color: .white)
                y += headerHeight
            }
        }
        y += margin
        let foreground: RGBImage.Color = isHomeScreen ? .white : textColor
        if isHomeScreen {
            draw(screen.title, into: &image, x: margin, y: y, scale: scale, color: .white)
            y += lineHeight * 2
        }
        if screen.isError {
            let bannerHeight = lineHeight * (screen.lines.count + 1)
            image.fill(x: 0, y: y, width: width, height: bannerHeight, color: errorColor)
            y += lineHeight / 2
            for line in screen.lines {
                draw(line, into: &image, x: margin, y: y, scale: scale, color: .white)
                y += lineHeight
            }
        } else {
            for line in screen.lines {
                draw(line, into: &image, x: margin, y: y, scale: scale, color: foreground)
                y += lineHeight
            }
        }
        return image
    }

    static func textWidth(_ text: String, scale: Int) -> Int {
        text.count * (BitmapFont.glyphWidth + 1) * scale
    }

    /// Draws one line of text; characters past the right edge are clipped.
    static func draw(
        _ text: String, into image: inout RGBImage, x: Int, y: Int, scale: Int, color: RGBImage.Color
    ) {
        var cursor = x
        for character in text {
            if cursor + BitmapFont.glyphWidth * scale > image.width { break }
            let rows = BitmapFont.rows(for: character)
            for (row, bits) in rows.enumerated() where bits != 0 {
                for column in 0..<BitmapFont.glyphWidth where bits & (0x10 >> column) != 0 {
                    image.fill(
                        x: cursor + column * scale, y: y + row * scale, width: scale, height: scale,
                        color: color)
                }
            }
            cursor += (BitmapFont.glyphWidth + 1) * scale
        }
    }
}
