import COpenSSL
import Foundation

/// Whether the TLS server at the other end of a connection holds the private key of the certificate
/// a pair record keeps for it: completing a handshake proves possession of the key of the certificate
/// the server presented (it signs or decrypts with it), and that certificate's public key must be the
/// expected one. Used before a Wi-Fi device's address is trusted: anyone on the network can announce a
/// name or answer `GetValue UniqueDeviceID`, only the real device can finish this handshake.
public enum TLSPeerProof {
    /// Runs a TLS client handshake on the connected, blocking socket `fd` (its receive and send
    /// timeouts bound each step), presenting `certificate` and `key` as the client (the pair record's
    /// host identity, as libimobiledevice does), from TLS 1.0 up at security level 0 (iOS 9's
    /// lockdownd). Returns whether the server's certificate carries `expected`'s public key; throws
    /// when no handshake completes. Nothing is sent inside the session; `fd` stays open (the
    /// caller's).
    public static func serverHolds(
        _ expected: X509Certificate, fd: Int32, certificate: X509Certificate, key: RSAPrivateKey
    ) throws -> Bool {
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw HostCryptoError.openSSL("SSL_CTX_new")
        }
        defer { SSL_CTX_free(context) }
        SSL_CTX_set_security_level(context, 0)
        guard hadeploy_SSL_CTX_set_min_proto_version(context, TLS1_VERSION) == 1,
            SSL_CTX_set_cipher_list(context, "ALL:@SECLEVEL=0") == 1,
            SSL_CTX_use_certificate(context, certificate.handle) == 1,
            SSL_CTX_use_PrivateKey(context, key.handle) == 1
        else { throw HostCryptoError.openSSL("setting up a TLS client") }
        guard let session = SSL_new(context) else { throw HostCryptoError.openSSL("SSL_new") }
        defer { SSL_free(session) }
        guard SSL_set_fd(session, fd) == 1 else { throw HostCryptoError.openSSL("SSL_set_fd") }
        guard SSL_connect(session) == 1 else { throw HostCryptoError.openSSL("the TLS handshake") }
        defer { SSL_shutdown(session) }
        guard let presented = SSL_get1_peer_certificate(session) else { return false }
        defer { X509_free(presented) }
        guard let theirs = X509_get0_pubkey(presented), let wanted = X509_get0_pubkey(expected.handle) else {
            return false
        }
        return EVP_PKEY_eq(theirs, wanted) == 1
    }
}
