import COpenSSL
import Foundation

/// HMAC-SHA1 (RFC 2104), as OpenSSH uses it for hashed known_hosts entries.
public enum HMACSHA1 {
    /// The 20-byte authentication code of `message` under `key`.
    public static func authenticationCode(for message: Data, key: Data) -> [UInt8] {
        let keyBytes = [UInt8](key)
        let messageBytes = [UInt8](message)
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard
            HMAC(
                EVP_sha1(), keyBytes, Int32(keyBytes.count), messageBytes, messageBytes.count, &code, &length)
                != nil
        else { fatalError(HostCryptoError.openSSL("HMAC(SHA-1)").description) }
        return Array(code.prefix(Int(length)))
    }
}
