import NIOSSL

/// TLS for https/wss: the system's roots plus, for a self-signed server or a private CA, the
/// certificates of a PEM file.
enum TLSSetup {
    static func configuration(caFile: String?, server: String) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(caFile)
                tls.additionalTrustRoots = [.certificates(certificates)]
            } catch {
                throw HomeAssistantError(
                    .invalidServerURL, server: server,
                    message: "cannot read the CA file \(caFile) for \(server): \(error). "
                        + "Pass a PEM file holding the server's certificate or its CA")
            }
        }
        return tls
    }
}
