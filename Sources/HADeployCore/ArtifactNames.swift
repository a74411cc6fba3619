/// Names read out of an app's Info.plist end up in paths on devices and hosts
/// (`PublicStaging/<bundle id>`, `/Applications/<Name>.app`, simulator containers). An artifact is
/// untrusted input: `../DCIM` as a bundle id once made a cleanup remove the camera roll. Every such
/// name is checked here before any path is built from it.
public enum ArtifactNames {
    /// A bundle identifier as Apple allows it: reverse-DNS, ASCII letters, digits, `-` and `.`,
    /// at least two non-empty components. Returns the problem, or nil when the id is acceptable.
    public static func bundleIdentifierProblem(_ identifier: String) -> String? {
        if identifier.isEmpty { return "the bundle identifier is empty" }
        if identifier.utf8.count > 255 { return "the bundle identifier is longer than 255 bytes" }
        let allowed = identifier.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", ".": return true
            default: return false
            }
        }
        if !allowed {
            return "the bundle identifier \(quoted(identifier)) may only contain letters, digits, '-' and '.'"
        }
        let components = identifier.split(separator: ".", omittingEmptySubsequences: false)
        if components.contains(where: \.isEmpty) {
            return
                "the bundle identifier \(quoted(identifier)) has an empty component ('..' or a leading/trailing '.')"
        }
        if components.count < 2 {
            return "the bundle identifier \(quoted(identifier)) is not reverse-DNS (e.g. com.example.app)"
        }
        return nil
    }

    /// One path component (an executable or `.app` directory name): non-empty, no `/`, no NUL,
    /// not `.` or `..`. Returns the problem, or nil.
    public static func pathComponentProblem(_ name: String, what: String) -> String? {
        if name.isEmpty { return "the \(what) is empty" }
        if name == "." || name == ".." { return "the \(what) \(quoted(name)) is not a file name" }
        if name.contains("/") || name.unicodeScalars.contains(where: { $0.value == 0 }) {
            return "the \(what) \(quoted(name)) contains '/' or a NUL byte"
        }
        if name.utf8.count > 255 { return "the \(what) is longer than 255 bytes" }
        return nil
    }

    /// Whether `path` (relative, `/`-separated) stays inside its base: no `..`, `.` or empty
    /// components, no leading `/`, no NUL.
    public static func isContainedRelativePath(_ path: String) -> Bool {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.unicodeScalars.contains(where: { $0.value == 0 })
        else { return false }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && $0 != "." && $0 != ".."
        }
    }

    private static func quoted(_ text: String) -> String {
        let printable = text.unicodeScalars.map { scalar -> String in
            scalar.value < 0x20 || scalar.value == 0x7F
                ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined()
        return "'\(printable.prefix(80))'"
    }
}
