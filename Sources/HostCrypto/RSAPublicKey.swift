import COpenSSL

/// An RSA public key held by OpenSSL (an `EVP_PKEY` with no private half, freed with its owner).
/// Two keys are equal when their modulus and exponent are.
public final class RSAPublicKey: @unchecked Sendable, Equatable {
    let handle: OpaquePointer

    /// The public half of `key` (any `EVP_PKEY`), copied through its SubjectPublicKeyInfo DER.
    init(copyingPublicHalfOf key: OpaquePointer) throws {
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_PUBKEY(key, &der)
        guard count > 0, let der else { throw HostCryptoError.openSSL("i2d_PUBKEY") }
        defer { hadeploy_OPENSSL_free(der) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
        guard let copy = d2i_PUBKEY(nil, &cursor, Int(count)) else {
            throw HostCryptoError.openSSL("d2i_PUBKEY")
        }
        handle = copy
    }

    deinit { EVP_PKEY_free(handle) }

    public static func == (lhs: RSAPublicKey, rhs: RSAPublicKey) -> Bool {
        EVP_PKEY_eq(lhs.handle, rhs.handle) == 1
    }

    /// PKCS#1 PEM (`BEGIN RSA PUBLIC KEY`), the form lockdown's DevicePublicKey takes.
    public var pkcs1PEM: String {
        get throws { try encode(structure: "type-specific") }
    }

    /// SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`), what `openssl x509 -pubkey` prints.
    public var subjectPublicKeyInfoPEM: String {
        get throws { try encode(structure: "SubjectPublicKeyInfo") }
    }

    /// OpenSSL keeps the format and structure pointers in the encoder (it does not copy them), so
    /// they are static strings, which live as long as the program.
    private func encode(structure: StaticString) throws -> String {
        guard
            let encoder = OSSL_ENCODER_CTX_new_for_pkey(
                handle, hadeploy_EVP_PKEY_PUBLIC_KEY(), ("PEM" as StaticString).cString, structure.cString,
                nil)
        else { throw HostCryptoError.openSSL("OSSL_ENCODER_CTX_new_for_pkey(\(structure))") }
        defer { OSSL_ENCODER_CTX_free(encoder) }
        return try MemoryBIO.text(of: "encoding a public key as \(structure) PEM") {
            OSSL_ENCODER_to_bio(encoder, $0)
        }
    }
}
