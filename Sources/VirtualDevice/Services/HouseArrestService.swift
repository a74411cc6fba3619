import Foundation

/// `com.apple.mobile.house_arrest`: one `{Command, Identifier}` request (`VendContainer` = the
/// app's whole data container, `VendDocuments` = its Documents folder), answered `{Status:
/// Complete}` or `{Error: …}`; after a success the same connection speaks AFC rooted there
/// (libimobiledevice `afc_client_new_from_house_arrest_client`).
///
/// Errors as a device gives them: an app that is not installed, or (iOS 8.3 and later) one whose
/// container cannot be vended — VendDocuments without `UIFileSharingEnabled` — answers
/// `InstallationLookupFailed`. Apps installed on a twin count as development-signed
/// (get-task-allow), so VendContainer works for every installed app.
struct HouseArrestService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        let request = try await stream.readDictionary(timeout: .seconds(30))
        let command = request["Command"] as? String ?? ""
        let identifier = request["Identifier"] as? String ?? ""
        guard command == "VendContainer" || command == "VendDocuments" else {
            return try await stream.writePropertyList(["Error": "UnknownCommand"])
        }
        guard let app = await runtime.app(bundleIdentifier: identifier) else {
            return try await stream.writePropertyList(["Error": "InstallationLookupFailed"])
        }
        let container = runtime.paths.dataContainer(app.bundleIdentifier)
        var root = container
        if command == "VendDocuments" {
            if runtime.profile.productVersion.compare("8.3", options: .numeric) != .orderedAscending
                && !Self.sharesFiles(app, runtime: runtime)
            {
                return try await stream.writePropertyList(["Error": "InstallationLookupFailed"])
            }
            root = container.appendingPathComponent("Documents")
        }
        try runtime.fileSystem.createDirectory(
            at: container.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        try runtime.fileSystem.createDirectory(
            at: container.appendingPathComponent("Library/Preferences"), withIntermediateDirectories: true)
        try await stream.writePropertyList(["Status": "Complete"])
        runtime.logger.debug("house_arrest: \(command) \(identifier)")
        try await AFCService(root: root, runtime: runtime, stream: stream).run()
    }

    /// `UIFileSharingEnabled` in the installed bundle's Info.plist.
    static func sharesFiles(_ app: VirtualInstalledApp, runtime: DeviceRuntime) -> Bool {
        let store = runtime.paths.applications.appendingPathComponent(app.bundleIdentifier)
        let bundle = URL(fileURLWithPath: app.path).lastPathComponent
        let plist = store.appendingPathComponent(bundle).appendingPathComponent("Info.plist")
        guard let data = runtime.fileSystem.contents(atPath: plist.path),
            let info = try? PropertyList.dictionary(from: data)
        else {
            return false
        }
        return info["UIFileSharingEnabled"] as? Bool ?? false
    }
}
