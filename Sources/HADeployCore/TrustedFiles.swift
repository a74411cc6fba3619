import Foundation

/// Whether files hadeploy is about to run could have been written by someone other than the user
/// running it (or root): each file, and every folder above it.
///
/// Running a script that another local user can replace hands that user this process's rights — root's,
/// when hadeploy runs as root. So before running one, hadeploy checks that no one else could have put
/// it there: each path is owned by `userID` or root and is not writable by group or others. A folder
/// above it may be writable by others only when its sticky bit is set (as `/tmp` is), since then no one
/// else can rename or remove the entries hadeploy's user owns in it. Symbolic links are resolved first,
/// so their targets are what is checked.
public enum TrustedFiles {
    /// Why one of `paths` may not be trusted, or nil when only `userID` or root could have written them.
    public static func problem(paths: [String], userID: UInt32, fileSystem: any FileSystem) -> String? {
        for path in paths {
            // The physical path (Darwin's resolvingSymlinksInPath leaves /var, itself a link).
            let resolved =
                RealPath.of(URL(fileURLWithPath: path))
                ?? URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL
            if let problem = check(resolved.path, userID: userID, fileSystem: fileSystem, isAncestor: false) {
                return problem
            }
            var ancestor = resolved.deletingLastPathComponent()
            while true {
                if let problem = check(
                    ancestor.path, userID: userID, fileSystem: fileSystem, isAncestor: true)
                {
                    return problem
                }
                if ancestor.path == "/" || ancestor.path.isEmpty { break }
                ancestor = ancestor.deletingLastPathComponent()
            }
        }
        return nil
    }

    private static func check(_ path: String, userID: UInt32, fileSystem: any FileSystem, isAncestor: Bool)
        -> String?
    {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try fileSystem.attributesOfItem(atPath: path)
        } catch {
            return "\(path) cannot be checked: \(error.localizedDescription)"
        }
        let type = attributes[.type] as? FileAttributeType
        guard type == (isAncestor ? .typeDirectory : .typeRegular) else {
            return "\(path) is not a plain \(isAncestor ? "folder" : "file")"
        }
        guard let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value,
            let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value
        else { return "\(path) has no owner or mode to check" }
        guard owner == userID || owner == 0 else {
            return "\(path) belongs to another user (uid \(owner))"
        }
        let sticky = mode & 0o1000 != 0
        if mode & 0o022 != 0 && !(isAncestor && sticky) {
            return "\(path) can be changed by other users (mode \(String(mode & 0o7777, radix: 8)))"
        }
        return nil
    }
}
