/// Names from devices.yaml that become file and folder names on this host: a device id names its
/// twin's state folder (which a `--virtual` run empties), its screenshot and crash-report folder in
/// the report; a flavour names build and artifact folders. devices.yaml can come from a pull request,
/// so `../../x` there once made a run delete a folder outside the state folder. One rule for all of
/// them, checked when devices.yaml is read (`problem`), and a path component that is safe even for a
/// name that never passed it (`component`).
public enum PathNames {
    /// Longer names are refused: they would make file names past what file systems allow.
    public static let maximumLength = 64

    /// Why `name` cannot name a file or folder, or nil. Allowed: 1 to 64 ASCII letters, digits,
    /// `-`, `_` and `.`, starting with a letter or a digit (so never `.`, `..`, a hidden file or
    /// something a tool reads as an option).
    public static func problem(_ name: String, what: String) -> String? {
        if name.isEmpty { return "the \(what) is empty" }
        if name.utf8.count > maximumLength {
            return "the \(what) \(quoted(name)) is longer than \(maximumLength) characters"
        }
        guard let first = name.unicodeScalars.first, isAlphanumeric(first) else {
            return "the \(what) \(quoted(name)) must start with a letter or a digit"
        }
        if !name.unicodeScalars.allSatisfy({ isAlphanumeric($0) || $0 == "-" || $0 == "_" || $0 == "." }) {
            return "the \(what) \(quoted(name)) may only contain letters, digits, '-', '_' and '.' "
                + "(it names files and folders)"
        }
        return nil
    }

    /// `name` itself when it passes `problem`; otherwise a name made of its allowed characters plus a
    /// hash of the whole, so two different bad names never share a folder, and never `.`, `..`, empty,
    /// with a `/` or too long.
    public static func component(_ name: String) -> String {
        if problem(name, what: "name") == nil { return name }
        var kept = String(
            String.UnicodeScalarView(
                name.unicodeScalars.map { isAlphanumeric($0) || $0 == "-" || $0 == "_" ? $0 : "_" }
            ).prefix(maximumLength - 18))
        if kept.first.map({ !($0.isASCII && ($0.isLetter || $0.isNumber)) }) ?? true { kept = "x" + kept }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return kept + "-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return false
        }
    }

    private static func quoted(_ text: String) -> String {
        let printable = text.unicodeScalars.map { scalar -> String in
            scalar.value < 0x20 || scalar.value == 0x7F
                ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined()
        return printable.count > 40 ? "'\(printable.prefix(40))…'" : "'\(printable)'"
    }
}
