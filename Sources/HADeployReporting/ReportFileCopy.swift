import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a report folder `report merge` copies, named as hadeploy itself names them, and the
/// copy itself: from one folder into another, never out of either. A summary.json comes from another
/// host: its paths are only trusted once they are one of these names, and every folder on the way is
/// opened without following a symbolic link, so neither `../` nor a link in either folder leads out.
enum ReportFiles {
    /// The most bytes one screenshot or crash log may have: nothing hadeploy writes comes near it.
    static let maximumBytes = 128 << 20

    /// `screenshots/<device>.png`, as the pipeline writes a device's screenshot.
    static func screenshot(_ path: String, device: String) -> [String]? {
        path == "screenshots/\(PathNames.component(device)).png" ? path.components(separatedBy: "/") : nil
    }

    /// `screenshots/baseline/<device>.png` and `screenshots/diff/<device>.png`, as the screenshot review
    /// writes them.
    static func comparisonPicture(_ path: String, device: String) -> [String]? {
        let name = PathNames.component(device) + ".png"
        return ["screenshots/baseline/\(name)", "screenshots/diff/\(name)"].contains(path)
            ? path.components(separatedBy: "/") : nil
    }

    /// `…/crashes/<device>/<report>.ips` (or `.crash`): where a run keeps a device's crash logs,
    /// relative to its report folder; the report's own name as the device gave it, one plain name.
    static func crashReport(_ path: String, device: String) -> [String]? {
        let parts = path.components(separatedBy: "/")
        guard parts.count >= 3 else { return nil }
        let tail = Array(parts.suffix(3))
        let name = tail[2]
        guard tail[0] == "crashes", tail[1] == PathNames.component(device),
            name.hasSuffix(".ips") || name.hasSuffix(".crash"), !name.hasPrefix("."),
            name.utf8.count <= 255,
            !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        return tail
    }

    /// Why a file was not copied (a message for people, naming what was found).
    struct Refused: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Copies `relative` (names checked by the functions above) from the folder `source` to the same
    /// place under `target`: a regular file only, of at most `maximumBytes`, each folder on both sides
    /// a real folder (not a link), written to a fresh name and renamed into place (what was there is
    /// replaced, never followed, never removed first). Returns false when the source is not there.
    /// The same file on both sides (the merged folder is an input) is left as it is.
    static func copy(_ relative: [String], from source: URL, to target: URL) throws -> Bool {
        precondition(!relative.isEmpty)
        let shown = relative.joined(separator: "/")
        guard let sourceFolder = try openFolder(source, path: relative.dropLast(), create: false) else {
            return false
        }
        defer { close(sourceFolder) }
        let name = relative[relative.count - 1]
        let input = openat(sourceFolder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if input < 0 {
            let code = errno
            if code == ENOENT { return false }
            throw Refused(
                code == ELOOP
                    ? "\(shown) is a symbolic link"
                    : "\(shown) cannot be opened (\(SystemErrorText.posix(code)))")
        }
        defer { close(input) }
        var status = stat()
        guard fstat(input, &status) == 0 else {
            throw Refused("\(shown) cannot be read (\(SystemErrorText.posix(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Refused("\(shown) is not a regular file (it is \(kind(status.st_mode)))")
        }
        guard status.st_size <= maximumBytes else {
            throw Refused(
                "\(shown) is \(ByteCountFormatter.string(fromByteCount: Int64(status.st_size), countStyle: .file)), "
                    + "more than the \(maximumBytes >> 20) MB a screenshot or crash log of hadeploy can be")
        }
        let data = try readAll(input, shown: shown)

        guard let targetFolder = try openFolder(target, path: relative.dropLast(), create: true) else {
            throw Refused("\(shown): its folder cannot be made in \(target.path)")
        }
        defer { close(targetFolder) }
        var existing = stat()
        if fstatat(targetFolder, name, &existing, AT_SYMLINK_NOFOLLOW) == 0,
            existing.st_dev == status.st_dev, existing.st_ino == status.st_ino
        {
            return true
        }
        let temporary = ".hadeploy-merge-\(UUID().uuidString)"
        let output = openat(
            targetFolder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            throw Refused("\(shown) cannot be written in \(target.path) (\(SystemErrorText.posix(errno)))")
        }
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(output, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if close(output) != 0 && failure == 0 { failure = errno }
        if failure == 0 && renameat(targetFolder, temporary, targetFolder, name) != 0 { failure = errno }
        if failure != 0 {
            unlinkat(targetFolder, temporary, 0)
            throw Refused("\(shown) cannot be written in \(target.path) (\(SystemErrorText.posix(failure)))")
        }
        return true
    }

    /// The folder `path` under `root`, each step opened without following a link (made first when
    /// `create`); nil when a step is not there and `create` is false.
    private static func openFolder(_ root: URL, path: ArraySlice<String>, create: Bool) throws -> Int32? {
        var folder = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else {
            let code = errno
            if code == ENOENT && !create { return nil }
            throw Refused("\(root.path) cannot be opened (\(SystemErrorText.posix(code)))")
        }
        var walked: [String] = []
        for step in path {
            walked.append(step)
            if create && mkdirat(folder, step, 0o755) != 0 && errno != EEXIST {
                let code = errno
                close(folder)
                throw Refused(
                    "\(walked.joined(separator: "/")) cannot be made in \(root.path) (\(SystemErrorText.posix(code)))"
                )
            }
            let next = openat(folder, step, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(folder)
            guard next >= 0 else {
                if code == ENOENT && !create { return nil }
                throw Refused(
                    "\(walked.joined(separator: "/")) in \(root.path) "
                        + (code == ELOOP || code == ENOTDIR
                            ? "is a symbolic link or a file, not a folder"
                            : "cannot be opened (\(SystemErrorText.posix(code)))"))
            }
            folder = next
        }
        return folder
    }

    private static func readAll(_ descriptor: Int32, shown: String) throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR { continue }
                throw Refused("\(shown) cannot be read (\(SystemErrorText.posix(errno)))")
            }
            data.append(contentsOf: buffer[0..<count])
            // A file that grows while it is read is still held to the limit.
            if data.count > maximumBytes {
                throw Refused("\(shown) is more than the \(maximumBytes >> 20) MB a report file can be")
            }
        }
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a folder"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        case S_IFLNK: return "a symbolic link"
        default: return "not a file"
        }
    }
}
