import Foundation
import HostCrypto

/// Builds the certificates of a lockdown pair record the way libimobiledevice does
/// (PROTOCOL.md §2.5): RSA-2048 keys, X.509 v3, empty subject and issuer, valid for 10 years.
/// SHA-256 signatures instead of the host's SHA-1 (accepted by the clients, PROTOCOL.md §2.10).
enum PairingCertificateFactory {
    struct PairRecordMaterial {
        let rootCertificatePEM: String
        let rootPrivateKeyPEM: String
        let hostCertificatePEM: String
        let hostPrivateKeyPEM: String
        let deviceCertificatePEM: String
    }

    static func makeMaterial(devicePublicKey: RSAPublicKey) throws -> PairRecordMaterial {
        let rootKey = try RSAPrivateKey(generatingBits: 2048)
        let hostKey = try RSAPrivateKey(generatingBits: 2048)
        let now = EmulatorClock.now()
        let notBefore = now.addingTimeInterval(-60)
        let notAfter = now.addingTimeInterval(10 * 365 * 24 * 3600)

        let root = try X509Certificate(
            serialNumber: 0, publicKey: rootKey.publicKey, notBefore: notBefore, notAfter: notAfter,
            extensions: [.basicConstraints(certificateAuthority: true)], issuerKey: rootKey)
        let host = try X509Certificate(
            serialNumber: 0, publicKey: hostKey.publicKey, notBefore: notBefore, notAfter: notAfter,
            extensions: [
                .basicConstraints(certificateAuthority: false), .keyUsageDigitalSignatureKeyEncipherment,
            ],
            issuerKey: rootKey)
        let device = try X509Certificate(
            serialNumber: 0, publicKey: devicePublicKey, notBefore: notBefore, notAfter: notAfter,
            extensions: [
                .basicConstraints(certificateAuthority: false), .subjectKeyIdentifier,
                .keyUsageDigitalSignatureKeyEncipherment,
            ],
            issuerKey: rootKey)
        return PairRecordMaterial(
            rootCertificatePEM: try root.pem,
            rootPrivateKeyPEM: try rootKey.pkcs8PEM,
            hostCertificatePEM: try host.pem,
            hostPrivateKeyPEM: try hostKey.pkcs8PEM,
            deviceCertificatePEM: try device.pem)
    }

    /// A self-signed certificate for the device key, used for TLS when no pair record holds a
    /// DeviceCertificate (the clients never verify the server certificate, PROTOCOL.md §2.6).
    static func selfSignedDeviceCertificate(deviceKey: RSAPrivateKey) throws -> String {
        let now = EmulatorClock.now()
        let certificate = try X509Certificate(
            serialNumber: 1, publicKey: deviceKey.publicKey, notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(10 * 365 * 24 * 3600),
            extensions: [.basicConstraints(certificateAuthority: false)], issuerKey: deviceKey)
        return try certificate.pem
    }

    /// True when the PEM certificate carries `publicKey` (the DeviceCertificate in a host-made pair
    /// record must contain the device's own key).
    static func certificate(_ pem: String, carries publicKey: RSAPublicKey) -> Bool {
        guard let certificate = try? X509Certificate(pem: pem) else { return false }
        return certificate.carries(publicKey)
    }
}
