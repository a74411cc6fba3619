/// What a virtual device's screen shows; a screenshot is a rendering of this.
public struct VirtualScreen: Sendable, Equatable, Codable {
    /// Title line: the app's display name, or the device name on the home screen.
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
