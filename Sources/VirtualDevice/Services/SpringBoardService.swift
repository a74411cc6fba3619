import Foundation
import ImageCodec

/// com.apple.springboardservices (`pymobiledevice3 springboard`): the home screen's layout,
/// icons, wallpaper and interface orientation. Requests are `{command: …}` (lower-case keys, unlike
/// the other services); setIconState has no reply.
struct SpringBoardService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(120))
            switch request["command"] as? String ?? "" {
            case "getInterfaceOrientation":
                try await stream.writePropertyList(["interfaceOrientation": orientation])
            case "getIconState":
                try await stream.writePropertyList(await iconState())
            case "setIconState":
                continue
            case "getIconPNGData":
                let known = await isKnown(request["bundleId"] as? String ?? "")
                try await stream.writePropertyList(
                    known ? ["pngData": try Self.tile(Self.iconColor, 120)] : [:])
            case "getHomeScreenWallpaperPNGData":
                try await stream.writePropertyList([
                    "pngData": try Self.tile(ScreenRenderer.springboardBackground, 64)
                ])
            case "getHomeScreenIconMetrics":
                try await stream.writePropertyList([
                    "homeScreenIconWidth": 76.0, "homeScreenIconHeight": 76.0, "homeScreenIconMaxPages": 15,
                    "homeScreenIconDockMaxCount": runtime.profile.majorVersion >= 11 ? 15 : 6,
                    "homeScreenIconColumns": 5, "homeScreenIconRows": 4, "homeScreenWidth": 1024.0,
                    "homeScreenHeight": 768.0,
                ])
            default:
                // A real SpringBoard drops a connection on a command it does not know.
                return
            }
        }
    }

    /// Portrait when the screen is taller than wide, as the presets' iPads stand.
    private var orientation: Int {
        runtime.profile.screenHeight >= runtime.profile.screenWidth ? 1 : 3
    }

    static let iconColor = RGBImage.Color(red: 0x03, green: 0xA9, blue: 0xF4)

    static func tile(_ color: RGBImage.Color, _ size: Int) throws -> Data {
        try ImageCodec.encode(RGBImage(width: size, height: size, fill: color), as: .png)
    }

    private func isKnown(_ bundleIdentifier: String) async -> Bool {
        if await runtime.app(bundleIdentifier: bundleIdentifier) != nil { return true }
        return SystemAppCatalog.entries(major: runtime.profile.majorVersion).contains {
            $0.bundleIdentifier == bundleIdentifier
        }
    }

    /// Dock first, then pages of 20 icons: system apps, then installed apps.
    private func iconState() async -> [Any] {
        let system = SystemAppCatalog.entries(major: runtime.profile.majorVersion)
        let dockIDs = [
            "com.apple.mobilesafari", "com.apple.mobilemail", "com.apple.mobileslideshow", "com.apple.Music",
        ]
        func icon(_ identifier: String, _ name: String) -> [String: Any] {
            ["displayIdentifier": identifier, "bundleIdentifier": identifier, "displayName": name]
        }
        let dock = system.filter { dockIDs.contains($0.bundleIdentifier) }.map {
            icon($0.bundleIdentifier, $0.name)
        }
        var icons = system.filter { !dockIDs.contains($0.bundleIdentifier) }.map {
            icon($0.bundleIdentifier, $0.name)
        }
        icons += await runtime.installedApps.map { icon($0.bundleIdentifier, $0.displayName) }
        var pages: [Any] = [dock]
        var index = 0
        while index < icons.count {
            pages.append(Array(icons[index..<min(index + 20, icons.count)]))
            index += 20
        }
        return pages
    }
}
