import Foundation
import HADeployCore
import SSHTransport

/// The few Info.plist facts the remote commands need.
struct AppBundleInfo: Sendable, Equatable {
    /// `HADashboard.app`
    let directoryName: String
    /// `HADashboard`
    let name: String
    let executable: String
    let bundleID: String

    init(app: URL) throws {
        let directoryName = app.standardizedFileURL.lastPathComponent
        guard directoryName.hasSuffix(".app"), directoryName.count > 4 else {
            throw SSHError.localFileFailed(path: app.path, reason: "an app bundle directory must end in .app")
        }
        self.directoryName = directoryName
        self.name = String(directoryName.dropLast(4))
        var plist: [String: Any] = [:]
        if let data = try? Data(contentsOf: app.appendingPathComponent("Info.plist")),
            let parsed = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: Any]
        {
            plist = parsed
        }
        self.executable = plist["CFBundleExecutable"] as? String ?? name
        self.bundleID = plist["CFBundleIdentifier"] as? String ?? ""
        // These names become paths and `rm -rf` arguments on the device: only plain names pass.
        let problem =
            ArtifactNames.pathComponentProblem(directoryName, what: "app folder name")
            ?? ArtifactNames.pathComponentProblem(executable, what: "CFBundleExecutable")
            ?? ArtifactNames.bundleIdentifierProblem(bundleID)
        if let problem {
            throw SSHError.localFileFailed(
                path: app.path, reason: problem + "; nothing was sent to the device")
        }
    }

    /// From an installed app's `Info.plist` as read back from the device.
    init(directoryName: String, infoPlist: Data, bundleID fallback: String) {
        self.directoryName = directoryName
        self.name = directoryName.hasSuffix(".app") ? String(directoryName.dropLast(4)) : directoryName
        let plist =
            (try? PropertyListSerialization.propertyList(from: infoPlist, format: nil)) as? [String: Any]
            ?? [:]
        self.executable = plist["CFBundleExecutable"] as? String ?? name
        self.bundleID = plist["CFBundleIdentifier"] as? String ?? fallback
    }
}
