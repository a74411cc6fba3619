import COpenSSL
import Foundation

/// HMAC-SHA256 (RFC 2104, RFC 4231): the signature of a plan file handed from one CI job to another
/// (`HADEPLOY_PLAN_KEY`).
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func authenticationCode(for message: Data, key: Data) -> [UInt8] {
        let keyBytes = [UInt8](key)
        let messageBytes = [UInt8](message)
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard
            HMAC(
                EVP_sha256(), keyBytes, Int32(keyBytes.count), messageBytes, messageBytes.count, &code,
                &length) != nil
        else { fatalError(HostCryptoError.openSSL("HMAC(SHA-256)").description) }
        return Array(code.prefix(Int(length)))
    }

    /// Whether `code` is the authentication code of `message` under `key`, compared in constant time
    /// (how long it takes says nothing about how much of a forged code was right).
    public static func isValid(_ code: [UInt8], for message: Data, key: Data) -> Bool {
        let expected = authenticationCode(for: message, key: key)
        guard code.count == expected.count else { return false }
        return CRYPTO_memcmp(code, expected, expected.count) == 0
    }
}
