/// The app currently in the foreground of a virtual device, as launched through debugserver.
public struct VirtualRunningApp: Sendable, Equatable, Codable {
    public let bundleIdentifier: String
    /// argv as the debugger sent it; argv[0] is the executable path.
    public let arguments: [String]
    /// Environment entries from `QEnvironmentHexEncoded` (`NAME=value`).
    public let environment: [String]
    /// What the app's screen shows right now.
    public let screen: VirtualScreen
}

/// What a virtual device's screen shows; a screenshot is a rendering of this.
public struct VirtualScreen: Sendable, Equatable, Codable {
    /// Title line (the app's display name, or "SpringBoard").
    public var title: String
    /// Body lines, top to bottom.
    public var lines: [String]
    /// Drawn as an error (red banner).
    public var isError: Bool
    /// Kiosk mode hides the status and title bars, like the real dashboard app.
    public var kiosk: Bool

    public init(title: String, lines: [String], isError: Bool = false, kiosk: Bool = false) {
        self.title = title
        self.lines = lines
        self.isError = isError
        self.kiosk = kiosk
    }
}
