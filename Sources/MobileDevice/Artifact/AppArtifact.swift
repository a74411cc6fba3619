import Foundation
import HADeployCore
import HostCrypto
import ZIPFoundation

/// What hadeploy knows about an app before touching a device: identity, version, slices, size and
/// content hash — read from an `.ipa` (without unpacking it) or an `.app` directory.
public struct AppArtifact: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case ipa
        case appDirectory
    }

    public typealias Platform = AppPlatform

    public let url: URL
    public let kind: Kind
    public let platform: Platform
    public let bundleIdentifier: String
    /// CFBundleShortVersionString (marketing version), if present.
    public let shortVersion: String?
    /// CFBundleVersion (build number).
    public let bundleVersion: String
    /// MinimumOSVersion (iOS) from Info.plist: the oldest iOS the app runs on; nil when it names none.
    public let minimumOSVersion: String?
    public let executable: String
    /// Slices of the main executable ("armv7", "arm64"…).
    public let architectures: [String]
    /// Bytes to upload: the `.ipa` file size, or the sum of the bundle's file sizes.
    public let uploadSize: Int
    /// Its `embedded.mobileprovision` (a signed development or ad hoc build); nil when it has none.
    public internal(set) var provisioning: ProvisioningProfile?
    /// Hex SHA-256 of the content (see `ContentHasher`); empty when inspected without hashing.
    public internal(set) var contentHash: String
    /// Size, modification time and inode of an `.ipa` (for an `.app` directory, a digest of every
    /// entry's path, kind, size, modification time and inode): when they match the install record,
    /// the recorded hash is reused instead of reading the content again.
    var fingerprint: String?

    /// Reads an `.ipa` or `.app`; throws `MobileDeviceError(.invalidArtifact)` naming what is wrong.
    public static func inspect(_ url: URL, in fileSystem: any FileSystem) throws -> AppArtifact {
        try inspect(url, hashing: true, in: fileSystem)
    }

    /// The content hash, computed now (it reads the whole artifact).
    func hashed(in fileSystem: any FileSystem) throws -> AppArtifact {
        var copy = self
        copy.contentHash = try ContentHasher.hash(of: url, isDirectory: kind == .appDirectory, in: fileSystem)
        return copy
    }

    /// Reads identity, versions and slices only (capped reads; the content is not hashed).
    /// The artifact is then known by its real path (`url`): a symbolic link to an `.app` or `.ipa` is
    /// followed here, once, so every device gets what was read.
    public static func inspect(_ url: URL, hashing: Bool, in fileSystem: any FileSystem) throws -> AppArtifact
    {
        let (real, isDirectory) = try resolve(url)
        let app =
            isDirectory
            ? try inspectAppDirectory(real, shown: url, in: fileSystem)
            : try inspectIPA(real, shown: url, in: fileSystem)
        return hashing ? try app.hashed(in: fileSystem) : app
    }

    /// The real path of `url` and whether it is a directory. Anything but a regular file or a directory
    /// (a FIFO would block the first read, a device never end) is refused before it is opened.
    static func resolve(_ url: URL) throws -> (URL, isDirectory: Bool) {
        var status = stat()
        guard stat(url.path, &status) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw invalid(url, "it does not exist", next: "Build the app first, or fix the path.")
            }
            throw invalid(
                url, "it cannot be read (\(String(cString: strerror(code))))",
                next: "Check the path and its permissions.")
        }
        let isDirectory: Bool
        switch status.st_mode & S_IFMT {
        case S_IFDIR: isDirectory = true
        case S_IFREG: isDirectory = false
        case S_IFIFO:
            throw invalid(
                url, "it is a FIFO (named pipe), not an .ipa file or an .app folder",
                next: "Pass the .ipa or .app the build produced.")
        default:
            throw invalid(
                url, "it is not a regular file or a folder (a device or a socket)",
                next: "Pass the .ipa or .app the build produced.")
        }
        guard let real = RealPath.of(url.path) else {
            throw invalid(url, "its real path cannot be resolved", next: "Check the path.")
        }
        return (URL(fileURLWithPath: real, isDirectory: isDirectory), isDirectory)
    }

    private static func inspectAppDirectory(_ url: URL, shown: URL, in fileSystem: any FileSystem) throws
        -> AppArtifact
    {
        // Walked first: links that leave the bundle, and FIFOs where the Info.plist or the executable
        // should be, are found before anything is opened.
        let entries: [AppDirectoryEntry]
        do {
            entries = try AppDirectoryWalker.entries(of: url, in: fileSystem)
        } catch {
            throw invalid(
                shown, "its files cannot be listed (\(error))", next: "Check the folder's permissions.")
        }
        if let problem = BundleLinks.problem(in: entries, root: url) {
            throw invalid(
                shown, problem,
                next: "Replace the link by what it points to (cp -RL), or rebuild the app.")
        }
        // A Mac bundle keeps everything under Contents/; an iOS one has no such folder.
        let mac = url.appendingPathComponent("Contents/Info.plist")
        let platform: Platform =
            (try? mac.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true
            ? .macCatalyst : .iOS
        let infoURL = platform == .macCatalyst ? mac : url.appendingPathComponent("Info.plist")
        // Only a regular file of sane size: a FIFO would block, a device or a huge file never end.
        let relativeInfo = platform == .macCatalyst ? "Contents/Info.plist" : "Info.plist"
        guard let infoEntry = entries.first(where: { $0.relativePath == relativeInfo }),
            case .file(let infoSize) = infoEntry.kind
        else {
            throw invalid(shown, "it has no Info.plist", next: "Pass the .app bundle the build produced.")
        }
        if infoSize > infoPlistLimit {
            throw invalid(
                shown, "its Info.plist is larger than \(infoPlistLimit >> 20) MB: not a real app",
                next: "Pass the .app bundle the build produced.")
        }
        guard let infoData = try? Data(contentsOf: infoURL) else {
            throw invalid(shown, "its Info.plist cannot be read", next: "Check the bundle's permissions.")
        }
        let info = try parseInfo(infoData, artifact: shown)
        let relativeExecutable =
            platform == .macCatalyst ? "Contents/MacOS/" + info.executable : info.executable
        let executableURL = url.appendingPathComponent(relativeExecutable)
        guard
            entries.contains(where: {
                if case .file = $0.kind { return $0.relativePath == relativeExecutable }
                return false
            }), let reader = try? ChunkedFileReader(url: executableURL)
        else {
            throw invalid(shown, "its executable \(relativeExecutable) is missing", next: "Rebuild the app.")
        }
        var header = [UInt8](repeating: 0, count: MachOSlices.headerBytesNeeded)
        let count = try header.withUnsafeMutableBytes { try reader.read(into: $0) }
        let slices = try architectures(
            Array(header.prefix(count)), executable: info.executable, artifact: shown)
        let size = entries.reduce(0) { total, entry in
            if case .file(let size) = entry.kind { return total + size }
            return total
        }
        var app = AppArtifact(
            url: url, kind: .appDirectory, platform: platform, bundleIdentifier: info.bundleIdentifier,
            shortVersion: info.shortVersion,
            bundleVersion: info.bundleVersion, minimumOSVersion: info.minimumOSVersion,
            executable: info.executable, architectures: slices,
            uploadSize: size, contentHash: "", fingerprint: directoryFingerprint(entries))
        if let entry = entries.first(where: { $0.relativePath == profileName }),
            case .file(let bytes) = entry.kind
        {
            guard bytes <= profileLimit,
                let data = try? Data(contentsOf: url.appendingPathComponent(profileName))
            else {
                throw invalid(
                    shown, "its \(profileName) cannot be read or is larger than 1 MB",
                    next: "Rebuild the app.")
            }
            app.provisioning = try profile(data, shown: shown)
        }
        return app
    }

    static let profileName = "embedded.mobileprovision"
    /// A real profile is a few dozen KiB (a hundred devices' UDIDs and the certificates).
    static let profileLimit = 1 << 20

    /// The provisioning profile in `data` (a CMS envelope around a plist).
    static func profile(_ data: Data, shown: URL) throws -> ProvisioningProfile {
        guard let content = try? CMSEnvelope.content(of: data),
            let profile = ProvisioningProfile(plist: content)
        else {
            throw invalid(
                shown,
                "its \(profileName) is not a provisioning profile (no CMS envelope around a profile plist)",
                next: "Rebuild the app; a device refuses it as it is.")
        }
        return profile
    }

    private static func inspectIPA(_ url: URL, shown: URL, in fileSystem: any FileSystem) throws
        -> AppArtifact
    {
        let archive = try IPAArchive.open(url, shown: shown)
        let app = try IPAArchive.application(in: archive, limits: .standard, shown: shown)
        let infoEntry = app.infoPlist
        let infoData = try extract(
            infoEntry, from: archive, limit: infoPlistLimit, whole: true, artifact: shown)
        let info = try parseInfo(infoData, artifact: shown)
        guard let executableEntry = archive[app.folder + info.executable] else {
            throw invalid(
                shown, "its executable \(app.folder + info.executable) is missing", next: "Rebuild the app.")
        }
        let header = try extract(
            executableEntry, from: archive, limit: MachOSlices.headerBytesNeeded, artifact: shown)
        let slices = try architectures([UInt8](header), executable: info.executable, artifact: shown)
        let attributes = (try? fileSystem.attributesOfItem(atPath: url.path)) ?? [:]
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        var result = AppArtifact(
            url: url, kind: .ipa, platform: .iOS, bundleIdentifier: info.bundleIdentifier,
            shortVersion: info.shortVersion,
            bundleVersion: info.bundleVersion, minimumOSVersion: info.minimumOSVersion,
            executable: info.executable, architectures: slices,
            uploadSize: size,
            contentHash: "", fingerprint: "\(size)-\(modified)-\(inode)")
        if let entry = archive[app.folder + profileName] {
            let data = try extract(entry, from: archive, limit: profileLimit, whole: true, artifact: shown)
            result.provisioning = try profile(data, shown: shown)
        }
        return result
    }

    private static func directoryFingerprint(_ entries: [AppDirectoryEntry]) -> String {
        let hasher = SHA256Hasher()
        for entry in entries {
            let kind: String
            switch entry.kind {
            case .directory: kind = "D"
            case .file(let size): kind = "F\(size)"
            case .symbolicLink(let target): kind = "L\(target)"
            }
            hasher.update(Data("\(entry.relativePath)\0\(kind)\0\(entry.stamp)\n".utf8))
        }
        return "dir-" + hasher.finalizeHex()
    }

    /// Reads at most `limit` bytes of an entry; stops decompressing once it has them.
    /// An Info.plist is a few kilobytes; a hostile archive can inflate one to gigabytes.
    static let infoPlistLimit = 4 << 20

    /// At most `limit` bytes of an entry, decompressing no further; with `whole`, an entry longer
    /// than that is an error instead of being cut.
    static func extract(
        _ entry: Entry, from archive: Archive, limit: Int, whole: Bool = false, artifact: URL
    ) throws -> Data {
        struct Enough: Error {}
        var collected = Data()
        do {
            _ = try archive.extract(entry, bufferSize: 64 * 1024, skipCRC32: true) { chunk in
                collected.append(chunk.prefix(limit + 1 - collected.count))
                if collected.count > limit { throw Enough() }
            }
        } catch is Enough {
            if whole {
                throw invalid(
                    artifact, "\(entry.path) inflates to more than \(limit >> 20) MB: not a real app",
                    next: "Rebuild or re-export the .ipa.")
            }
        } catch {
            throw invalid(artifact, "\(entry.path) cannot be read (\(error))", next: "Export the .ipa again.")
        }
        return collected.prefix(limit)
    }

    private struct Info {
        let bundleIdentifier: String
        let shortVersion: String?
        let bundleVersion: String
        let minimumOSVersion: String?
        let executable: String
    }

    private static func parseInfo(_ data: Data, artifact: URL) throws -> Info {
        guard let plist = PlistBridge.parse(data), plist.dictionary != nil else {
            throw invalid(artifact, "its Info.plist is not a property list", next: "Rebuild the app.")
        }
        guard let identifier = plist["CFBundleIdentifier"]?.string, !identifier.isEmpty else {
            throw invalid(
                artifact, "its Info.plist has no CFBundleIdentifier", next: "Set the bundle id and rebuild.")
        }
        guard let executable = plist["CFBundleExecutable"]?.string, !executable.isEmpty else {
            throw invalid(artifact, "its Info.plist has no CFBundleExecutable", next: "Rebuild the app.")
        }
        // Only an <integer> element: `.integer` also reads a numeric <string>, which is the right form.
        if case .integer(let number)? = plist["CFBundleVersion"] {
            // Present, but not the string iOS requires (installd refuses it): say so, not "missing".
            throw invalid(
                artifact,
                "its Info.plist's CFBundleVersion is the number \(number), not a string (<integer> instead "
                    + "of <string>)",
                next: "Write it as a string (Xcode's CURRENT_PROJECT_VERSION does) and rebuild.")
        }
        guard let version = plist["CFBundleVersion"]?.string, !version.isEmpty else {
            throw invalid(
                artifact, "its Info.plist has no CFBundleVersion", next: "Set a build number and rebuild.")
        }
        // These names become device paths (PublicStaging/<bundle id>): refuse anything that is not a
        // plain name before any path is built from it.
        if let problem = ArtifactNames.bundleIdentifierProblem(identifier) {
            throw invalid(
                artifact, problem, next: "Set PRODUCT_BUNDLE_IDENTIFIER to a reverse-DNS id and rebuild.")
        }
        if let problem = ArtifactNames.pathComponentProblem(executable, what: "CFBundleExecutable") {
            throw invalid(
                artifact, problem, next: "Set CFBundleExecutable to the executable's file name and rebuild.")
        }
        return Info(
            bundleIdentifier: identifier, shortVersion: plist["CFBundleShortVersionString"]?.string,
            bundleVersion: version, minimumOSVersion: plist["MinimumOSVersion"]?.string,
            executable: executable)
    }

    private static func architectures(_ header: [UInt8], executable: String, artifact: URL) throws -> [String]
    {
        do {
            return try MachOSlices.architectures(inHeader: header)
        } catch {
            throw invalid(
                artifact, "its executable \(executable) is not a Mach-O binary (\(error))",
                next: "Build for an iOS device (not a simulator or a script).")
        }
    }

    static func invalid(_ url: URL, _ reason: String, next: String) -> MobileDeviceError {
        MobileDeviceError(
            .invalidArtifact, step: "read app \(url.lastPathComponent)", device: nil,
            reason: "\(url.path): \(reason)", nextStep: next)
    }
}
