import COpenSSL

/// An RSA private key held by OpenSSL (an `EVP_PKEY`, freed with its owner).
///
/// Immutable once made: OpenSSL 3 lets threads use one key concurrently as long as none changes it.
public final class RSAPrivateKey: @unchecked Sendable {
    let handle: OpaquePointer
    /// The public half, as a key of its own.
    public let publicKey: RSAPublicKey

    /// A new key of `bits` bits (public exponent 65537).
    public convenience init(generatingBits bits: Int = 2048) throws {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, ("RSA" as StaticString).cString, nil) else {
            throw HostCryptoError.openSSL("EVP_PKEY_CTX_new_from_name(RSA)")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1
        else { throw HostCryptoError.openSSL("RSA key generation setup") }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else {
            throw HostCryptoError.openSSL("RSA-\(bits) key generation")
        }
        try self.init(taking: key)
    }

    /// A key from PEM: PKCS#1 (`BEGIN RSA PRIVATE KEY`) or unencrypted PKCS#8 (`BEGIN PRIVATE KEY`).
    public convenience init(pem: String) throws {
        let bio = try MemoryBIO(reading: pem)
        guard let key = PEM_read_bio_PrivateKey(bio.handle, nil, nil, nil) else {
            throw HostCryptoError.openSSL("reading an RSA private key PEM")
        }
        guard EVP_PKEY_get_base_id(key) == hadeploy_EVP_PKEY_RSA() else {
            EVP_PKEY_free(key)
            throw HostCryptoError(operation: "reading an RSA private key PEM", reason: "the key is not RSA")
        }
        try self.init(taking: key)
    }

    /// Owns `key` from here on (frees it when the public half cannot be taken).
    private init(taking key: OpaquePointer) throws {
        do {
            publicKey = try RSAPublicKey(copyingPublicHalfOf: key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        handle = key
    }

    deinit { EVP_PKEY_free(handle) }

    /// PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`).
    public var pkcs1PEM: String {
        get throws {
            try MemoryBIO.text(of: "writing a PKCS#1 private key PEM") {
                PEM_write_bio_PrivateKey_traditional($0, handle, nil, nil, 0, nil, nil)
            }
        }
    }

    /// PKCS#8 PEM (`BEGIN PRIVATE KEY`).
    public var pkcs8PEM: String {
        get throws {
            try MemoryBIO.text(of: "writing a PKCS#8 private key PEM") {
                PEM_write_bio_PrivateKey($0, handle, nil, nil, 0, nil, nil)
            }
        }
    }
}
