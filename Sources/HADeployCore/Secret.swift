/// A value that must never be shown: tokens, passwords, keys.
///
/// `description`, `debugDescription` and `Encodable` all produce `***`; the only way to the
/// plain text is `reveal()`, which callers use at the last moment (a launch argument, an HTTP header).
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    Encodable
{
    private let value: String

    public init(_ value: String) { self.value = value }

    public func reveal() -> String { value }

    public var isEmpty: Bool { value.isEmpty }

    public static let redacted = "***"

    /// `text` with every one of `secrets` shown as `***`: the longest first (then by value), so the words
    /// are the same in every process and a secret that holds another (a key's path naming its key ID) is
    /// hidden whole, never as `AuthKey_***.p8` in one run and `***` in the next.
    public static func scrub<S: Sequence<String>>(_ text: String, of secrets: S) -> String {
        var result = text
        let ordered = secrets.filter { !$0.isEmpty }.sorted { ($0.count, $0) > ($1.count, $1) }
        for secret in ordered where result.contains(secret) {
            result = result.replacingOccurrences(of: secret, with: redacted)
        }
        return result
    }

    public var description: String { Secret.redacted }
    public var debugDescription: String { Secret.redacted }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Secret.redacted)
    }

    /// Whether a key name looks like it holds a secret (TOKEN, KEY, SECRET, PASSWORD, ...).
    public static func isSecretKey(_ key: String) -> Bool {
        let upper = key.uppercased()
        // `_PASS` as the old scripts spelled passwords (IPAD2_SSH_PASS, UNRAID_PASS).
        return ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE"].contains {
            upper.contains($0)
        } || upper.hasSuffix("_PASS")
    }
}
