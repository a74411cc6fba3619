import Foundation

/// A path with every symbolic link resolved, as the kernel sees it (`realpath(3)`). Unlike
/// `URL.resolvingSymlinksInPath()`, which on Darwin strips `/private` again (`/var` and `/tmp` are
/// links there), this is the physical path: the one a compiler or `$(pwd)` prints, and the one whose
/// folders can be checked one by one without meeting a link.
public enum RealPath {
    /// nil when the path does not exist (or cannot be resolved).
    public static func of(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    public static func of(_ url: URL) -> URL? {
        of(url.path).map { URL(fileURLWithPath: $0) }
    }
}
