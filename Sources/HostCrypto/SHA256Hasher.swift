import COpenSSL
import Foundation

/// A streaming SHA-256 (FIPS 180-4): feed bytes in any number of pieces, then take the digest once.
public final class SHA256Hasher {
    private let context: OpaquePointer
    private var finished = false

    public init() {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.context = context
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError(HostCryptoError.openSSL("EVP_DigestInit_ex(SHA-256)").description)
        }
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "SHA256Hasher.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        guard EVP_DigestUpdate(context, base, bytes.count) == 1 else {
            fatalError(HostCryptoError.openSSL("EVP_DigestUpdate(SHA-256)").description)
        }
    }

    /// The 32-byte digest of everything fed in; the hasher takes no more bytes after this.
    public func finalize() -> [UInt8] {
        precondition(!finished, "SHA256Hasher.finalize called twice")
        finished = true
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1 else {
            fatalError(HostCryptoError.openSSL("EVP_DigestFinal_ex(SHA-256)").description)
        }
        return Array(digest.prefix(Int(length)))
    }

    /// The digest as 64 lower-case hex digits (what `sha256sum` prints).
    public func finalizeHex() -> String { Hex.lowercase(finalize()) }

    /// SHA-256 of `data` in one call, as lower-case hex.
    public static func hex(of data: Data) -> String {
        let hasher = SHA256Hasher()
        hasher.update(data)
        return hasher.finalizeHex()
    }
}
