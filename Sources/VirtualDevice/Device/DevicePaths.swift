import Foundation
import HADeployCore

/// Where one device keeps its files under the emulator's state directory.
struct DevicePaths: Sendable {
    let root: URL

    init(stateDirectory: URL, name: String) {
        var safe = String(
            name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" })
        // "", "." and ".." would name the devices folder itself or its parent.
        if safe.allSatisfy({ $0 == "." }) { safe = "_" + safe }
        root = stateDirectory.appendingPathComponent("devices").appendingPathComponent(safe)
    }

    var stateFile: URL { root.appendingPathComponent("state.json") }
    var deviceKey: URL { root.appendingPathComponent("device-key.pem") }
    var deviceCertificate: URL { root.appendingPathComponent("device-certificate.pem") }
    /// AFC root (`/var/mobile/Media` on the device).
    var media: URL { root.appendingPathComponent("Media") }
    /// crashreportcopymobile root (`/var/mobile/Library/Logs/CrashReporter`).
    var crashReports: URL { root.appendingPathComponent("CrashReporter") }
    /// Installed bundles, one directory per bundle identifier.
    var applications: URL { root.appendingPathComponent("Applications") }
    /// Data containers, one directory per bundle identifier.
    var containers: URL { root.appendingPathComponent("Containers") }
    var developerImage: URL { root.appendingPathComponent("DeveloperDiskImage.dmg") }
    /// The provisioning profiles installed on the device (each `<UUID>.mobileprovision`, as signed):
    /// an app's embedded profile is installed with it; `com.apple.misagent` lists them.
    var profiles: URL { root.appendingPathComponent("Profiles") }

    /// The data container of an app (`Documents/ha-log.txt`, `Library/Preferences/…`).
    func dataContainer(_ bundleIdentifier: String) -> URL {
        containers.appendingPathComponent(bundleIdentifier)
    }

    /// The folders a set-up device has under /var/mobile/Media (AFC clients push to /Downloads).
    static let mediaFolders = [
        "DCIM", "Downloads", "Books", "PhotoData", "Photos", "Purchases", "Recordings", "iTunes_Control",
    ]

    func createAll(in fileSystem: any FileSystem) throws {
        // The root holds the device's private key and its pairing state.
        try fileSystem.createPrivateDirectory(at: root)
        for url in [media, crashReports, applications, containers]
            + Self.mediaFolders.map(media.appendingPathComponent)
        {
            try fileSystem.createDirectory(at: url, withIntermediateDirectories: true)
        }
    }
}
