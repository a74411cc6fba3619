import COpenSSL

/// A failure inside OpenSSL, with what was being done and OpenSSL's own reason.
public struct HostCryptoError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let reason: String

    public var description: String { "\(operation) failed: \(reason)" }

    /// Takes the thread's OpenSSL error queue (emptying it) into an error for `operation`.
    static func openSSL(_ operation: String) -> HostCryptoError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(
                String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return HostCryptoError(
            operation: operation,
            reason: reasons.isEmpty ? "no reason given by OpenSSL" : reasons.joined(separator: "; "))
    }
}
