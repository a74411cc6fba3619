import Foundation
import NIOSSL

/// TLS for https/wss: the system's roots plus, for a self-signed server or a private CA, the
/// certificates of a PEM file.
enum TLSSetup {
    static func configuration(caFile: String?, server: String) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            // Why the file is unusable, in words: NIOSSL only says `failedToLoadCertificate`.
            if access(caFile, R_OK) != 0 {
                let reason = String(cString: strerror(errno)).lowercased()
                throw HomeAssistantError(
                    .invalidServerURL, server: server,
                    message: "cannot read the CA file \(caFile) for \(server) (\(reason)): check HA_CA_FILE, "
                        + "or pass a PEM file holding the server's certificate or its CA")
            }
            let certificates = (try? NIOSSLCertificate.fromPEMFile(caFile)) ?? []
            guard !certificates.isEmpty else {
                throw HomeAssistantError(
                    .invalidServerURL, server: server,
                    message: "the CA file \(caFile) for \(server) holds no PEM certificate (-----BEGIN "
                        + "CERTIFICATE-----): pass a PEM file holding the server's certificate or its CA")
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        return tls
    }

    /// The TLS client handler for `host`, with SNI when `host` is a name (an IP address may not be
    /// sent as SNI; the certificate is then checked against the address).
    static func clientHandler(_ context: NIOSSLContext, host: String) throws -> NIOSSLClientHandler {
        do {
            return try NIOSSLClientHandler(context: context, serverHostname: host)
        } catch let error as NIOSSLExtraError where error == .cannotUseIPAddressInSNI {
            return try NIOSSLClientHandler(context: context, serverHostname: nil)
        }
    }
}
