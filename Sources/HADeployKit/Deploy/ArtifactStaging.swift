import DeployModel
import Foundation
import HADeployCore
import MobileDevice

/// The `.app` bundles unpacked for one run. Installs over SSH take a bundle, not an `.ipa`: each
/// `.ipa` those devices need is unpacked once, before any device starts, into a folder of its own
/// under `<state>/artifacts/<deploy id>/`, checked against what was inspected, and every device of
/// the run sends that same bundle; the folder is removed when the run ends. (Each device unpacking
/// into one shared folder let devices of one flavour wipe each other's bundle mid-upload.)
public struct ArtifactStaging: Sendable {
    /// The run's folder; nil when nothing had to be unpacked.
    public let folder: URL?
    /// The artifacts, with `bundlePath` set where an `.ipa` was unpacked.
    public let artifacts: [String: Artifact]
    let fileSystem: any FileSystem

    /// Unpacks the `.ipa` of every flavour in `needingBundles` (each distinct file once).
    public static func prepare(
        _ artifacts: [String: Artifact], needingBundles: Set<String>, under base: URL, runID: String,
        limits: IPAArchive.Limits = .standard, in fileSystem: any FileSystem
    ) throws -> ArtifactStaging {
        var result = artifacts
        var unpacked: [String: String] = [:]
        var folder: URL?
        do {
            for flavour in artifacts.keys.sorted() where needingBundles.contains(flavour) {
                guard let artifact = artifacts[flavour], !fileSystem.isDirectory(atPath: artifact.path) else {
                    continue
                }
                if let bundle = unpacked[artifact.path] {
                    result[flavour]?.bundlePath = bundle
                    continue
                }
                let runFolder: URL
                if let folder {
                    runFolder = folder
                } else {
                    runFolder = try makeRunFolder(under: base, runID: runID, in: fileSystem)
                    folder = runFolder
                }
                let bundle = try unpack(
                    artifact, into: runFolder.appendingPathComponent("app-\(unpacked.count + 1)"),
                    limits: limits, in: fileSystem)
                unpacked[artifact.path] = bundle
                result[flavour]?.bundlePath = bundle
            }
        } catch {
            if let folder { try? fileSystem.removeItem(at: folder) }
            throw error
        }
        return ArtifactStaging(folder: folder, artifacts: result, fileSystem: fileSystem)
    }

    /// Removes the run's unpacked bundles.
    public func remove() {
        if let folder { try? fileSystem.removeItem(at: folder) }
    }

    /// `<base>/<run id>-<pid>/` with this process's id in `owner.pid`; folders of runs whose process is
    /// gone (a SIGKILL leaves them) are removed first. The pid is in the name too: a worker of the same
    /// run (same deploy id, same state folder) makes its own folder and never removes the parent's.
    static func makeRunFolder(under base: URL, runID: String, in fileSystem: any FileSystem) throws -> URL {
        try fileSystem.createPrivateDirectory(at: base)
        for name in (try? fileSystem.contentsOfDirectory(atPath: base.path)) ?? [] {
            let candidate = base.appendingPathComponent(name)
            let owner = fileSystem.contents(atPath: candidate.appendingPathComponent("owner.pid").path)
                .flatMap {
                    Int32(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                }
            if let owner, owner > 0, kill(owner, 0) != 0, errno == ESRCH {
                try? fileSystem.removeItem(at: candidate)
            }
        }
        let folder = base.appendingPathComponent(PathNames.component("\(runID)-\(getpid())"))
        try? fileSystem.removeItem(at: folder)
        try fileSystem.createPrivateDirectory(at: folder)
        try fileSystem.writePrivately(
            Data("\(getpid())\n".utf8), to: folder.appendingPathComponent("owner.pid"))
        return folder
    }

    /// Unpacks one `.ipa` and checks that the bundle is the app its inspection read.
    static func unpack(
        _ artifact: Artifact, into folder: URL, limits: IPAArchive.Limits, in fileSystem: any FileSystem
    ) throws -> String {
        let ipa = URL(fileURLWithPath: artifact.path)
        let app: AppArtifact
        do {
            let bundle = try IPAArchive.unpack(ipa, into: folder, limits: limits, in: fileSystem)
            app = try AppArtifact.inspect(bundle, hashing: false, in: fileSystem)
        } catch let error as MobileDeviceError {
            let reason =
                error.reason.hasPrefix(ipa.path + ": ")
                ? String(error.reason.dropFirst(ipa.path.count + 2)) : error.reason
            throw ArtifactError(path: ipa.path, problem: reason + " (nothing was installed anywhere)")
        }
        // Changed between the inspection and the unpack (rewritten in place): not what was inspected.
        if app.bundleIdentifier != artifact.bundleID || app.executable != artifact.executable
            || app.bundleVersion != artifact.buildNumber
            || (app.shortVersion ?? "0.0.0") != artifact.marketingVersion
        {
            throw ArtifactError(
                path: ipa.path,
                problem: "the app unpacked from it (\(app.bundleIdentifier) \(app.shortVersion ?? "") "
                    + "(\(app.bundleVersion))) is not the one inspected a moment before (\(artifact.bundleID) "
                    + "\(artifact.marketingVersion) (\(artifact.buildNumber))): the file changed during the "
                    + "run; nothing was installed anywhere")
        }
        return app.url.path
    }
}
