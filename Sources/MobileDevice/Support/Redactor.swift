import Foundation

/// Replaces secret values (launch-argument tokens, passwords) with `***` in any text that may be
/// logged or shown.
public struct Redactor: Sendable {
    private let secrets: [String]

    /// - Parameter secrets: exact strings to hide; empty strings are ignored.
    public init(_ secrets: Set<String>) {
        // Longest first, so a secret that contains another is hidden whole.
        self.secrets = secrets.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
    }

    public static let none = Redactor([])

    public func redact(_ text: String) -> String {
        var result = text
        for secret in secrets where result.contains(secret) {
            result = result.replacingOccurrences(of: secret, with: "***")
        }
        return result
    }
}
