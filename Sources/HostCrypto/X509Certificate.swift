import COpenSSL
import Foundation

/// An X.509 certificate held by OpenSSL (an `X509`, freed with its owner).
public final class X509Certificate: @unchecked Sendable {
    /// A v3 extension of a new certificate, in the order given.
    public enum Extension: Sendable, Equatable {
        /// basicConstraints, critical: `cA` true (no path length) or false.
        case basicConstraints(certificateAuthority: Bool)
        /// keyUsage, critical: digitalSignature and keyEncipherment.
        case keyUsageDigitalSignatureKeyEncipherment
        /// subjectKeyIdentifier, not critical: the SHA-1 of the subject's public key bits (RFC 5280 4.2.1.2).
        case subjectKeyIdentifier

        var nid: Int32 {
            switch self {
            case .basicConstraints: NID_basic_constraints
            case .keyUsageDigitalSignatureKeyEncipherment: NID_key_usage
            case .subjectKeyIdentifier: NID_subject_key_identifier
            }
        }

        /// The value in OpenSSL's configuration syntax (x509v3_config(5)).
        var configuration: String {
            switch self {
            case .basicConstraints(let authority): authority ? "critical,CA:TRUE" : "critical,CA:FALSE"
            case .keyUsageDigitalSignatureKeyEncipherment: "critical,digitalSignature,keyEncipherment"
            case .subjectKeyIdentifier: "hash"
            }
        }
    }

    let handle: OpaquePointer

    /// A v3 certificate for `publicKey` with empty subject and issuer names, signed by `issuerKey`
    /// with SHA-256 (sha256WithRSAEncryption).
    public init(
        serialNumber: Int, publicKey: RSAPublicKey, notBefore: Date, notAfter: Date, extensions: [Extension],
        issuerKey: RSAPrivateKey
    ) throws {
        guard let certificate = X509_new() else { throw HostCryptoError.openSSL("X509_new") }
        handle = certificate
        guard let name = X509_NAME_new() else { throw HostCryptoError.openSSL("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        guard X509_set_version(certificate, 2) == 1,  // X509_VERSION_3
            ASN1_INTEGER_set(X509_get_serialNumber(certificate), serialNumber) == 1,
            X509_set_issuer_name(certificate, name) == 1, X509_set_subject_name(certificate, name) == 1,
            ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(certificate, publicKey.handle) == 1
        else { throw HostCryptoError.openSSL("filling in a certificate") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        for wanted in extensions {
            guard let made = X509V3_EXT_nconf_nid(nil, &context, wanted.nid, wanted.configuration) else {
                throw HostCryptoError.openSSL("making the certificate extension \(wanted.configuration)")
            }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else {
                throw HostCryptoError.openSSL("adding the certificate extension \(wanted.configuration)")
            }
        }
        guard X509_sign(certificate, issuerKey.handle, EVP_sha256()) > 0 else {
            throw HostCryptoError.openSSL("signing a certificate")
        }
    }

    /// A certificate from PEM (`BEGIN CERTIFICATE`).
    public init(pem: String) throws {
        let bio = try MemoryBIO(reading: pem)
        guard let certificate = PEM_read_bio_X509(bio.handle, nil, nil, nil) else {
            throw HostCryptoError.openSSL("reading a certificate PEM")
        }
        handle = certificate
    }

    deinit { X509_free(handle) }

    /// PEM (`BEGIN CERTIFICATE`).
    public var pem: String {
        get throws {
            try MemoryBIO.text(of: "writing a certificate PEM") { PEM_write_bio_X509($0, handle) }
        }
    }

    /// True when the certificate's subject public key is `key`.
    public func carries(_ key: RSAPublicKey) -> Bool {
        guard let own = X509_get0_pubkey(handle) else { return false }
        return EVP_PKEY_eq(own, key.handle) == 1
    }
}
