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
        } else if isHomeScreen {
            for line in screen.lines {
                draw(line, into: &image, x: margin, y: y, scale: scale, color: foreground)
                y += lineHeight
            }
        } else {
            drawDashboard(screen.lines, into: &image, y: y, scale: scale)
        }
        return image
    }

    static let cardColor = RGBImage.Color.white
    static let cardBorderColor = RGBImage.Color(red: 0xB0, green: 0xBE, blue: 0xC5)

    /// The app's lines as a dashboard: a card (`  [Title]` and its `    row` lines, as
    /// `DashboardScreen` writes them) is a white box with a coloured title band, as Home Assistant
    /// draws its cards; any other line is text on the page. A card added in Home Assistant is a box
    /// more on the screenshot, as it is on a real iPad.
    static func drawDashboard(_ lines: [String], into image: inout RGBImage, y top: Int, scale: Int) {
        let lineHeight = (BitmapFont.glyphHeight + 4) * scale
        let margin = 4 * scale
        var y = top
        var index = 0
        while index < lines.count {
            let line = lines[index]
            index += 1
            guard line.hasPrefix("  [") else {
                draw(line, into: &image, x: margin, y: y, scale: scale, color: textColor)
                y += lineHeight
                continue
            }
            var rows: [String] = []
            while index < lines.count, lines[index].hasPrefix("    ") {
                rows.append(String(lines[index].dropFirst(4)))
                index += 1
            }
            let title = String(line.dropFirst(3).dropLast(line.hasSuffix("]") ? 1 : 0))
            let cardWidth = image.width - 2 * margin
            let cardHeight = lineHeight * (rows.count + 1) + margin
            let border = max(1, scale / 2)
            image.fill(x: margin, y: y, width: cardWidth, height: cardHeight, color: cardBorderColor)
            image.fill(
                x: margin + border, y: y + border, width: cardWidth - 2 * border,
                height: cardHeight - 2 * border,
                color: cardColor)
            image.fill(
                x: margin + border, y: y + border, width: cardWidth - 2 * border, height: lineHeight,
                color: headerColor)
            draw(title, into: &image, x: 2 * margin, y: y + 2 * scale + border, scale: scale, color: .white)
            var rowY = y + lineHeight + margin / 2
            for row in rows {
                draw(row, into: &image, x: 2 * margin, y: rowY, scale: scale, color: textColor)
                rowY += lineHeight
            }
            y += cardHeight + margin
        }
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
