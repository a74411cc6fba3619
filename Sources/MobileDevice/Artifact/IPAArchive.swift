import Foundation
import HADeployCore
import ZIPFoundation

/// The one reader of `.ipa` archives: opened only when the zip end record is where the format puts
/// it, exactly one `Payload/<Name>.app`, and unpacked (for installs that take a bundle) under caps on
/// the number of entries and the bytes they inflate to, never through a symbolic link.
public enum IPAArchive {
    /// Caps on what an archive may hold once unpacked.
    public struct Limits: Sendable, Equatable {
        public var maximumEntries: Int
        public var maximumBytes: Int64

        public init(maximumEntries: Int, maximumBytes: Int64) {
            self.maximumEntries = maximumEntries
            self.maximumBytes = maximumBytes
        }

        /// Far above any real app (the HA Dashboard bundle has about 1,500 files): 50,000 entries,
        /// 2 GiB unpacked.
        public static let standard = Limits(maximumEntries: 50_000, maximumBytes: 2 << 30)
    }

    /// The app an archive holds: `Payload/<Name>.app/` and its Info.plist entry.
    struct Application {
        let name: String
        let folder: String
        let infoPlist: Entry
    }

    /// The end-of-central-directory record is 22 bytes plus a comment of at most 65,535 bytes: it
    /// lies in the last 65,557 bytes or the file is no zip archive (a truncated download, an HTML
    /// error page). Only that tail is searched; ZIPFoundation would scan the whole file backwards,
    /// byte by byte (48 s for 150 MB).
    static let endRecordSearchBytes = 65_535 + 22

    /// What a file without the end record is, for messages.
    public static let notZip =
        "not a zip archive (no end-of-central-directory record in its last 64 KiB): a truncated download "
        + "or not an .ipa at all"

    /// Opens the archive after finding its end record in the file's tail.
    static func open(_ url: URL, shown: URL) throws -> Archive {
        let found: Bool
        do {
            found = try hasEndRecord(url)
        } catch {
            throw AppArtifact.invalid(
                shown, "it cannot be read (\(error))", next: "Check the file and its permissions.")
        }
        guard found else {
            throw AppArtifact.invalid(
                shown,
                "it is " + notZip,
                next: "Rebuild or re-export the .ipa, or download it again.")
        }
        do {
            return try Archive(url: url, accessMode: .read)
        } catch {
            throw AppArtifact.invalid(
                shown, "it is not a readable zip archive (\(error))", next: "Rebuild or re-export the .ipa.")
        }
    }

    /// Whether the zip end record's signature is in the last 65,557 bytes of the file (read from its
    /// tail only: a 10 GB file that is no archive is told in a moment).
    public static func hasEndRecord(_ url: URL) throws -> Bool {
        // O_NONBLOCK: a FIFO put in the file's place since it was checked does not block the open.
        let descriptor = PlatformCalls.openFile(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw POSIXError(.EINVAL) }
        let size = Int64(status.st_size)
        let count = Int(min(size, Int64(endRecordSearchBytes)))
        guard count >= 22 else { return false }
        var tail = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = tail.withUnsafeMutableBytes {
                pread(
                    descriptor, $0.baseAddress! + done, count - done, off_t(size - Int64(count) + Int64(done))
                )
            }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            done += read
        }
        var index = count - 22
        while index >= 0 {
            if tail[index] == 0x50 && tail[index + 1] == 0x4B && tail[index + 2] == 0x05
                && tail[index + 3] == 0x06
            {
                return true
            }
            index -= 1
        }
        return false
    }

    /// The archive's one app, after counting its entries and the bytes they declare against `limits`.
    /// Two apps are refused by name: the inspection would read one and an unpack could install the other.
    static func application(in archive: Archive, limits: Limits, shown: URL) throws -> Application {
        var entries = 0
        var declared: UInt64 = 0
        var apps: [String] = []
        var infoPlists: [String: Entry] = [:]
        for entry in archive {
            entries += 1
            declared += entry.uncompressedSize
            if entries > limits.maximumEntries {
                throw tooLarge(shown, "more than \(limits.maximumEntries) entries", limits: limits)
            }
            let parts = entry.path.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "Payload", parts[1].hasSuffix(".app") else { continue }
            let name = String(parts[1])
            if !apps.contains(name) { apps.append(name) }
            // Payload/<Name>.app/Info.plist, exactly one level below Payload (plug-ins have their own).
            if parts.count == 3 && parts[2] == "Info.plist" { infoPlists[name] = entry }
        }
        if declared > UInt64(limits.maximumBytes) {
            throw tooLarge(
                shown, "entries that unpack to \(megabytes(Int64(clamping: declared)))", limits: limits)
        }
        if apps.count > 1 {
            throw AppArtifact.invalid(
                shown,
                "it holds \(apps.count) apps (\(apps.sorted().map { "Payload/\($0)" }.joined(separator: ", "))); "
                    + "an .ipa holds exactly one, and hadeploy will not guess which to install",
                next: "Export the .ipa again with only the app to deploy.")
        }
        guard let name = apps.first, let infoPlist = infoPlists[name] else {
            throw AppArtifact.invalid(
                shown, "it has no Payload/<App>.app/Info.plist",
                next: "Export the .ipa again from the archive.")
        }
        if let problem = ArtifactNames.pathComponentProblem(name, what: "app folder name") {
            throw AppArtifact.invalid(shown, problem, next: "Export the .ipa again from the archive.")
        }
        return Application(name: name, folder: "Payload/\(name)/", infoPlist: infoPlist)
    }

    /// Unpacks the archive's app (only `Payload/<Name>.app/…`) into `folder`, which must not exist
    /// yet; returns `folder/<Name>.app`. Counts real bytes as they inflate (an entry may declare fewer),
    /// never writes through a symbolic link (links are made last, and nothing may lie beneath one),
    /// and refuses links that lead outside the bundle. On any error `folder` is removed.
    public static func unpack(
        _ url: URL, shown: URL? = nil, into folder: URL, limits: Limits = .standard,
        in fileSystem: any FileSystem
    )
        throws -> URL
    {
        let shown = shown ?? url
        let manager = fileSystem
        try fileSystem.createPrivateDirectory(at: folder.deletingLastPathComponent())
        // A folder of its own: one that already exists could hold links planted there.
        guard mkdir(folder.path, 0o700) == 0 else {
            throw AppArtifact.invalid(
                shown, "it cannot be unpacked into \(folder.path) (\(String(cString: strerror(errno))))",
                next: "Check the state folder's permissions and free space.")
        }
        do {
            return try unpackChecked(url, shown: shown, into: folder, limits: limits, in: fileSystem)
        } catch {
            try? manager.removeItem(at: folder)
            throw error
        }
    }

    private static func unpackChecked(
        _ url: URL, shown: URL, into folder: URL, limits: Limits, in fileSystem: any FileSystem
    ) throws -> URL {
        let archive = try open(url, shown: shown)
        let app = try application(in: archive, limits: limits, shown: shown)
        var directories: [String] = []
        var files: [(String, Entry)] = []
        var links: [(String, Entry)] = []
        for entry in archive where entry.path.hasPrefix(app.folder) {
            var relative = String(entry.path.dropFirst(app.folder.count))
            if entry.type == .directory, relative.hasSuffix("/") { relative.removeLast() }
            if relative.isEmpty { continue }
            guard ArtifactNames.isContainedRelativePath(relative) else {
                throw AppArtifact.invalid(
                    shown, "its entry \(quoted(entry.path)) is not a plain path inside the app",
                    next: "Export the .ipa again from the archive.")
            }
            switch entry.type {
            case .directory: directories.append(relative)
            case .file: files.append((relative, entry))
            case .symlink: links.append((relative, entry))
            }
        }
        // Nothing beneath a link: a file written there would land wherever the link points.
        let linkPaths = Set(links.map(\.0))
        for path in directories + files.map(\.0) + links.map(\.0) {
            var prefix = Substring(path)
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                if linkPaths.contains(String(prefix)) {
                    throw AppArtifact.invalid(
                        shown,
                        "its entry \(quoted(app.folder + path)) lies beneath the symbolic link "
                            + "\(quoted(app.folder + String(prefix)))",
                        next: "Export the .ipa again from the archive.")
                }
            }
        }

        let manager = fileSystem
        let root = folder.appendingPathComponent(app.name)
        try manager.createDirectory(at: root, withIntermediateDirectories: false)
        for directory in directories {
            try manager.createDirectory(
                at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        var written: Int64 = 0
        for (path, entry) in files {
            let target = root.appendingPathComponent(path)
            try manager.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            let permissions = (entry.fileAttributes[.posixPermissions] as? NSNumber)?.uint16Value ?? 0o644
            let mode = mode_t(permissions & 0o755 | 0o600)
            let descriptor = PlatformCalls.openFile(
                target.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard descriptor >= 0 else {
                throw AppArtifact.invalid(
                    shown,
                    "\(entry.path) cannot be written to \(target.path) (\(String(cString: strerror(errno))))",
                    next: "Check the free space and permissions of the state folder.")
            }
            defer { close(descriptor) }
            do {
                let checksum = try archive.extract(entry, bufferSize: 64 * 1024, skipCRC32: false) { chunk in
                    written += Int64(chunk.count)
                    if written > limits.maximumBytes {
                        throw tooLarge(shown, "entries that unpack to more", limits: limits)
                    }
                    try chunk.withUnsafeBytes { buffer in
                        var offset = 0
                        while offset < buffer.count {
                            let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                            if count < 0 && errno == EINTR { continue }
                            guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                            offset += count
                        }
                    }
                }
                if checksum != entry.checksum {
                    throw AppArtifact.invalid(
                        shown, "\(entry.path) is corrupt (its CRC-32 does not match)",
                        next: "Download or export the .ipa again.")
                }
            } catch let error as MobileDeviceError {
                throw error
            } catch {
                throw AppArtifact.invalid(
                    shown, "\(entry.path) cannot be unpacked (\(error))", next: "Export the .ipa again.")
            }
        }
        for (path, entry) in links {
            // ZIPFoundation reads a link's target whole, at the size its header declares.
            guard entry.compressedSize <= 4096, entry.uncompressedSize <= 4096 else {
                throw AppArtifact.invalid(
                    shown, "its symbolic link \(quoted(entry.path)) declares a target of more than 4 KiB",
                    next: "Export the .ipa again from the archive.")
            }
            let data = try AppArtifact.extract(
                entry, from: archive, limit: 4096, whole: true, artifact: shown)
            guard let destination = String(data: data, encoding: .utf8), !destination.isEmpty,
                !destination.hasPrefix("/"), !destination.contains("\0")
            else {
                throw AppArtifact.invalid(
                    shown, "its symbolic link \(quoted(entry.path)) points to an absolute or unreadable path",
                    next: "Export the .ipa again from the archive.")
            }
            try manager.createSymbolicLink(
                atPath: root.appendingPathComponent(path).path, withDestinationPath: destination)
        }
        // Where every link really leads, now that all of them exist.
        let entries = try AppDirectoryWalker.entries(of: root, in: fileSystem)
        if let problem = BundleLinks.problem(in: entries, root: root) {
            throw AppArtifact.invalid(shown, problem, next: "Export the .ipa again from the archive.")
        }
        return root
    }

    static func tooLarge(_ shown: URL, _ what: String, limits: Limits) -> MobileDeviceError {
        AppArtifact.invalid(
            shown,
            "it has \(what): more than an app holds (limits: \(limits.maximumEntries) entries, "
                + "\(megabytes(limits.maximumBytes)) unpacked)",
            next: "Check that this is the app the build produced; a real app is far smaller.")
    }

    static func megabytes(_ bytes: Int64) -> String {
        bytes >= 1 << 30
            ? String(format: "%.1f GiB", Double(bytes) / Double(1 << 30))
            : String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }

    static func quoted(_ text: String) -> String {
        let printable = text.unicodeScalars.map { scalar -> String in
            scalar.value < 0x20 || scalar.value == 0x7F
                ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined()
        return "'\(printable.prefix(120))'"
    }
}

/// Symbolic links in an app bundle must stay inside it: one to `/` or `../..` would make an install
/// send (or a client read) files from outside the app.
enum BundleLinks {
    /// The first link in `entries` that leads outside `root`, described; nil when there is none.
    static func problem(in entries: [AppDirectoryEntry], root: URL) -> String? {
        guard let realRoot = realPath(root.path) else { return "its real path cannot be resolved" }
        for entry in entries {
            guard case .symbolicLink(let destination) = entry.kind else { continue }
            let inside: Bool
            if let real = realPath(entry.url.path) {
                inside = real == realRoot || real.hasPrefix(realRoot + "/")
            } else {
                // Dangling: its text must stay inside (nothing it could later point to is outside).
                inside = !destination.hasPrefix("/") && lexicallyInside(entry.relativePath, destination)
            }
            if !inside {
                return "its symbolic link \(IPAArchive.quoted(entry.relativePath)) leads outside the app "
                    + "(to \(IPAArchive.quoted(destination)))"
            }
        }
        return nil
    }

    static func realPath(_ path: String) -> String? { RealPath.of(path) }

    /// Whether `destination`, read from the folder holding `link`, stays below the bundle's root.
    static func lexicallyInside(_ link: String, _ destination: String) -> Bool {
        var stack = link.split(separator: "/").dropLast().map(String.init)
        for part in destination.split(separator: "/") {
            switch part {
            case ".": continue
            case "..":
                if stack.isEmpty { return false }
                stack.removeLast()
            default: stack.append(String(part))
            }
        }
        return true
    }
}
