import DeployModel
import Foundation
import HADeployCore
import MobileDevice

/// Reads what an `.app` directory or `.ipa` holds: bundle id, versions, executable slices — through
/// the one artifact reader (`AppArtifact`: capped reads, names checked before any path is built).
public struct ArtifactInspector: Sendable {
    public var fileSystem: any FileSystem

    public init(fileSystem: any FileSystem) { self.fileSystem = fileSystem }

    public func inspect(_ url: URL, flavour: String) throws -> Artifact {
        let app: AppArtifact
        do {
            app = try AppArtifact.inspect(url, hashing: false, in: fileSystem)
        } catch let error as MobileDeviceError {
            throw ArtifactError(
                path: url.path,
                problem: error.reason.hasPrefix(url.path + ": ")
                    ? String(error.reason.dropFirst(url.path.count + 2)) + " (nothing was installed anywhere)"
                    : error.reason)
        }
        // The real path: a link to the artifact is followed once, here, and every device gets that.
        var artifact = Artifact(
            path: app.url.path, bundleID: app.bundleIdentifier, executable: app.executable,
            marketingVersion: app.shortVersion ?? "0.0.0", buildNumber: app.bundleVersion, flavour: flavour,
            archs: app.architectures, platform: app.platform, minimumOSVersion: app.minimumOSVersion)
        artifact.provisioning = app.provisioning
        return artifact
    }
}
