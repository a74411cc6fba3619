import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HostCrypto
import MobileDevice
import Versioning

/// No Xcode here, and a build is needed: the deploy stops before touching any device.
public struct NoXcodeError: Error, CustomStringConvertible, ExitStatusProviding {
    public var flavours: [String]
    public var host: HostPlatform

    public var description: String {
        let which = flavours.joined(separator: ", ")
        let why =
            host == .linux
            ? "this is Linux, where Xcode cannot run" : "the flavour's Xcode is not installed here"
        return """
            cannot build \(which): \(why). Nothing was deployed. Ways on:
              1. hadeploy … --no-build --artifact PATH      an .ipa or .app built elsewhere (one for every flavour)
              2. hadeploy … --no-build --artifacts DIR      DIR/<flavour>/*.ipa (or .app), e.g. from a CI build job
              3. build_host: ssh://user@mac-mini   in devices.yaml: a Mac with the flavour's Xcode, reached
                 over SSH; hadeploy sends the source tree (HEAD plus uncommitted changes), builds there
                 and fetches the app back (trust it first: hadeploy trust-host ssh://user@mac-mini)
            Or try the whole pipeline on virtual devices: hadeploy all --virtual
            """
    }

    public var exitStatus: ExitStatus { .buildFailed }
}

/// An artifact that is not the one the plan was made with: the plan is refused before any device.
public struct ArtifactChanged: Error, CustomStringConvertible, ExitStatusProviding {
    public var flavour: String
    public var path: String
    public var description: String {
        "\(path) (flavour \(flavour)) is not the artifact this plan was made with (its SHA-256 differs): "
            + "make the plan again (hadeploy plan … --json > plan.json)"
    }
    public var exitStatus: ExitStatus { .config }
}

extension ArtifactPlan {
    /// `--artifact` (one for every flavour) or `--artifacts DIR`, found and hashed for the plan.
    public static func files(
        artifact: URL?, directory: URL?, flavours: [String], in fileSystem: any FileSystem
    ) throws -> ArtifactPlan {
        var files: [String: PlannedArtifact] = [:]
        for flavour in flavours {
            let url: URL
            if let artifact {
                url = artifact
            } else if let directory {
                guard let found = find(flavour: flavour, in: directory, fileSystem) else {
                    throw ArtifactError(
                        path: directory.path,
                        problem:
                            "no artifact for flavour \(flavour): expected \(flavour)/<Name>.ipa, \(flavour)/<Name>.app or \(flavour).ipa"
                    )
                }
                url = found
            } else {
                continue
            }
            let path = url.standardizedFileURL.path
            files[flavour] = PlannedArtifact(
                path: path, sha256: try ArtifactDigest.sha256(path, in: fileSystem))
        }
        return .files(files)
    }

    static func find(flavour: String, in directory: URL, _ fileSystem: any FileSystem) -> URL? {
        let candidates = [directory.appendingPathComponent("\(flavour).ipa")]
        if fileSystem.fileExists(atPath: candidates[0].path) { return candidates[0] }
        let sub = directory.appendingPathComponent(flavour)
        let names = (try? fileSystem.contentsOfDirectory(atPath: sub.path)) ?? []
        if let name = names.sorted().first(where: { $0.hasSuffix(".ipa") || $0.hasSuffix(".app") }) {
            return sub.appendingPathComponent(name)
        }
        return nil
    }

    /// The artifact for every flavour the plan's available devices use, as the plan names them: given
    /// files (refused when their hash is not the plan's) or demo bundles; builds are the caller's.
    /// Given files are first copied into `copies` (a private folder of this run's)
    /// and the copies are checked and installed: the file hashed is the file installed. nil (`status`,
    /// which installs nothing and only compares): the files are read where they are.
    public func artifacts(
        for plan: DeployPlan, host: HostPlatform, copyingInto copies: URL?, now: Date,
        in fileSystem: any FileSystem
    ) throws -> [String: Artifact] {
        let flavours = Array(Set(plan.devices.filter { $0.availability == .available }.map(\.flavour)))
            .sorted()
        let inspector = ArtifactInspector(fileSystem: fileSystem)
        var result: [String: Artifact] = [:]
        switch self {
        case .files(let files):
            var copied: [String: String] = [:]
            for flavour in flavours {
                guard let file = files[flavour] else {
                    throw ArtifactError(path: "(the plan)", problem: "no artifact for flavour \(flavour)")
                }
                let copy: String
                if let done = copied[file.path] {
                    copy = done
                } else if let copies {
                    let folder = copies.appendingPathComponent("\(copied.count + 1)")
                    try fileSystem.createPrivateDirectory(at: folder)
                    let made = try ArtifactDigest.privateCopy(of: file.path, into: folder, in: fileSystem)
                    guard made.sha256 == file.sha256 else {
                        throw ArtifactChanged(flavour: flavour, path: file.path)
                    }
                    copy = made.path
                    copied[file.path] = copy
                } else {
                    guard try ArtifactDigest.sha256(file.path, in: fileSystem) == file.sha256 else {
                        throw ArtifactChanged(flavour: flavour, path: file.path)
                    }
                    copy = file.path
                    copied[file.path] = copy
                }
                do {
                    result[flavour] = try inspector.inspect(URL(fileURLWithPath: copy), flavour: flavour)
                } catch let error as ArtifactError where error.path == copy {
                    // The run's private copy is no path the user knows: theirs is named.
                    throw ArtifactError(
                        path: file.path,
                        problem: error.problem.replacingOccurrences(of: copy, with: file.path))
                }
            }
        case .demo(let directory, let bundleID):
            let builder = DemoAppBuilder(bundleID: bundleID)
            for build in plan.builds where flavours.contains(build.flavour) {
                let flavour = Flavour(
                    name: build.flavour, xcode: nil, archs: build.archs.compactMap(Arch.init(rawValue:)),
                    deploymentTarget: build.deploymentTarget, sdk: build.sdk,
                    configuration: build.configuration,
                    scheme: nil, settings: [:], location: SourceLocation(file: "plan", line: 0))
                // Its profile lists the devices that take this flavour, as a build signed for them.
                let devices = plan.devices.filter {
                    $0.availability == .available && $0.flavour == build.flavour
                }
                .compactMap { $0.udid?.value }.filter(ProvisioningProfile.isHardwareUDID)
                result[build.flavour] = try builder.build(
                    flavour: flavour, marketingVersion: plan.version.marketingVersion,
                    buildNumber: plan.version.buildNumber, into: URL(fileURLWithPath: directory),
                    devices: devices, now: now, in: fileSystem)
            }
        case .build:
            throw NoXcodeError(flavours: flavours, host: host)
        case .nothing:
            throw NothingToInstall()
        }
        return result
    }
}

/// The content hash of an artifact: SHA-256 of an .ipa's bytes, or of an .app folder's files (each
/// file's relative path and SHA-256, in path order).
public enum ArtifactDigest {
    /// How much of a file is read at a time: hashing never holds a whole artifact in memory.
    static let chunkSize = 1 << 20

    public static func sha256(_ path: String, in fileSystem: any FileSystem) throws -> String {
        guard fileSystem.fileExists(atPath: path) else {
            throw ArtifactError(path: path, problem: "no such file or folder")
        }
        guard fileSystem.isDirectory(atPath: path) else { return try fileHash(path, fileSystem) }
        // A link to the .app: its content, not the link (listing the link itself gave no files, so
        // any bundle behind it had the same hash).
        let root = URL(fileURLWithPath: path).resolvingSymlinksInPath()
        return try folderDigest(root, fileSystem) { _, url in try fileHash(url.path, fileSystem) }
    }

    /// An .app folder's digest: each regular file's relative path and SHA-256 (from `file`, which
    /// reads or copies it) and each link's target, in path order. `link` and `folder` see the other
    /// entries (a copy makes them).
    static func folderDigest(
        _ root: URL, _ fileSystem: any FileSystem, file: (String, URL) throws -> String,
        link: (String, String) throws -> Void = { _, _ in },
        folder: (String, URL) throws -> Void = { _, _ in }
    ) throws -> String {
        var lines = ""
        for relative in ((try? fileSystem.subpathsOfDirectory(atPath: root.path)) ?? []).sorted() {
            let url = root.appendingPathComponent(relative)
            let type = try fileSystem.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
            if type == .typeSymbolicLink {
                let destination = try fileSystem.destinationOfSymbolicLink(atPath: url.path)
                try link(relative, destination)
                lines += "\(relative) -> \(destination)\n"
            } else if type == .typeRegular {
                lines += "\(relative) \(try file(relative, url))\n"
            } else if type == .typeDirectory {
                try folder(relative, url)
            }
        }
        return SHA256Hasher.hex(of: Data(lines.utf8))
    }

    /// A regular file's SHA-256, read in pieces (a FIFO or a device is refused, never waited on).
    static func fileHash(_ path: String, _ fileSystem: any FileSystem) throws -> String {
        let type = (try? fileSystem.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
        let target =
            type == .typeSymbolicLink
            ? (try? fileSystem.attributesOfItem(
                atPath: URL(fileURLWithPath: path).resolvingSymlinksInPath().path))?[.type]
                as? FileAttributeType
            : type
        guard target == .typeRegular else {
            throw ArtifactError(path: path, problem: "not a regular file or an .app folder")
        }
        let hasher = SHA256Hasher()
        do {
            try fileSystem.read(atPath: path, chunkSize: chunkSize) { hasher.update($0) }
        } catch let error as CancellationError {
            throw error
        } catch {
            throw ArtifactError(path: path, problem: "cannot be read (\(SystemErrorText.message(error)))")
        }
        return hasher.finalizeHex()
    }

    /// Copies the artifact at `path` into `folder` (a private folder of this run's) and returns the
    /// copy with its hash: what is installed is the copy, which no one else can change after it was
    /// hashed (the original can be replaced at any moment). One pass: each file is hashed as its bytes
    /// are written to the copy (the same digest `sha256` gives the copy), a megabyte at a time, so an
    /// unchanged redeploy reads the app once here instead of copying it and reading the copy back.
    public static func privateCopy(of path: String, into folder: URL, in fileSystem: any FileSystem) throws
        -> (
            path: String, sha256: String
        )
    {
        // Named as what the path leads to: a link `current.app` to `HADashboard.app` installs
        // `HADashboard.app`, as the bundle's own folder name says.
        let source = URL(fileURLWithPath: path).resolvingSymlinksInPath()
        let copy = folder.appendingPathComponent(source.lastPathComponent)
        guard fileSystem.fileExists(atPath: path) else {
            throw ArtifactError(path: path, problem: "no such file or folder")
        }
        // What would not install anyway is found before a byte is copied, under the user's own path.
        try checkBeforeCopying(path, source: source, fileSystem)
        do {
            guard fileSystem.isDirectory(atPath: path) else {
                return (copy.path, try copyFile(source.path, to: copy.path, fileSystem))
            }
            // Folders are made owner-writable and given their own permissions once filled (a
            // read-only folder of the bundle still gets its files).
            var folders = [(copy, try permissions(source.path, fileSystem))]
            try fileSystem.createDirectory(
                at: copy, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            let digest = try folderDigest(
                source, fileSystem,
                file: { relative, from in
                    try copyFile(from.path, to: copy.appendingPathComponent(relative).path, fileSystem)
                },
                link: { relative, destination in
                    try fileSystem.createSymbolicLink(
                        atPath: copy.appendingPathComponent(relative).path, withDestinationPath: destination)
                },
                folder: { relative, from in
                    let to = copy.appendingPathComponent(relative)
                    try fileSystem.createDirectory(
                        at: to, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                    folders.append((to, try permissions(from.path, fileSystem)))
                })
            for (folder, mode) in folders.reversed() {
                try fileSystem.setAttributes([.posixPermissions: mode], ofItemAtPath: folder.path)
            }
            return (copy.path, digest)
        } catch let error as ArtifactError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw ArtifactError(
                path: path, problem: "cannot be copied for this run (\(SystemErrorText.message(error)))")
        }
    }

    /// The most an artifact may hold, in bytes (files' sizes as they say, holes included): the App
    /// Store's own limit for an app's uncompressed size is 4 GB, and HA Dashboard is about 60 MB.
    public static let largestArtifact: Int64 = 4 << 30

    /// Refuses, naming `path` (the user's), an artifact larger than `largestArtifact` and a file that
    /// is no zip archive (an `.ipa` is one; its end record is read from the tail only).
    static func checkBeforeCopying(_ path: String, source: URL, _ fileSystem: any FileSystem) throws {
        func size(_ item: String) -> Int64 {
            (try? fileSystem.attributesOfItem(atPath: item))?[.size].flatMap { ($0 as? NSNumber)?.int64Value }
                ?? 0
        }
        var total: Int64 = 0
        if fileSystem.isDirectory(atPath: path) {
            for relative in (try? fileSystem.subpathsOfDirectory(atPath: source.path)) ?? [] {
                let item = source.appendingPathComponent(relative).path
                guard
                    (try? fileSystem.attributesOfItem(atPath: item))?[.type] as? FileAttributeType
                        == .typeRegular
                else { continue }
                total += size(item)
                if total > largestArtifact { break }
            }
        } else {
            total = size(source.path)
            let found: Bool
            do {
                found = try IPAArchive.hasEndRecord(source)
            } catch {
                throw ArtifactError(path: path, problem: "cannot be read (\(SystemErrorText.message(error)))")
            }
            guard found else {
                throw ArtifactError(
                    path: path,
                    problem: IPAArchive.notZip + " — rebuild or re-export it; nothing was copied")
            }
        }
        guard total <= largestArtifact else {
            throw ArtifactError(
                path: path,
                problem:
                    "holds more than \(largestArtifact >> 30) GiB (the App Store's limit for an app): not an "
                    + "app build to install — nothing was copied")
        }
    }

    /// Copies one regular file (a FIFO or a device is refused, never waited on), keeping its
    /// permissions; returns the SHA-256 of the bytes written.
    static func copyFile(_ source: String, to destination: String, _ fileSystem: any FileSystem) throws
        -> String
    {
        let type = (try? fileSystem.attributesOfItem(atPath: source))?[.type] as? FileAttributeType
        guard type == .typeRegular else {
            throw ArtifactError(path: source, problem: "not a regular file or an .app folder")
        }
        let mode = try permissions(source, fileSystem)
        let made = fileSystem.createFile(
            atPath: destination, contents: nil, attributes: [.posixPermissions: 0o600])
        guard made else {
            throw ArtifactError(path: source, problem: "cannot be copied for this run (\(destination))")
        }
        let hasher = SHA256Hasher()
        try fileSystem.read(atPath: source, chunkSize: chunkSize) { chunk in
            hasher.update(chunk)
            _ = try fileSystem.append(chunk, toFileAtPath: destination)
        }
        try fileSystem.setAttributes([.posixPermissions: mode], ofItemAtPath: destination)
        return hasher.finalizeHex()
    }

    static func permissions(_ path: String, _ fileSystem: any FileSystem) throws -> Int {
        (try fileSystem.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? 0o644
    }
}

/// The version of a project a plan is made for: devices.yaml's bytes, which `.env` keys are set (not
/// their values) and the app's version, hashed. The artifacts carry hashes of their own.
public enum ProjectFingerprint {
    public static func make(devicesYAML: Data, dotEnvKeys: [String], version: GitVersion) -> String {
        let hasher = SHA256Hasher()
        hasher.update(Data("hadeploy project\n".utf8))
        hasher.update(devicesYAML)
        hasher.update(Data("\n.env keys: \(Set(dotEnvKeys).sorted().joined(separator: ","))\n".utf8))
        hasher.update(Data("version: \(version.description)\n".utf8))
        return "sha256:" + hasher.finalizeHex()
    }
}
