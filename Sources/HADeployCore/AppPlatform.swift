/// Where an app bundle runs, told by its layout: an iOS `.app` is flat (`Info.plist` and the
/// executable at its root); a Mac Catalyst one is a macOS bundle (`Contents/Info.plist`,
/// `Contents/MacOS/<CFBundleExecutable>`). An app runs on one only.
public enum AppPlatform: String, Sendable, Hashable, Codable {
    case iOS
    case macCatalyst
}
