import Foundation
import SwiftASN1
import X509
import _CryptoExtras

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

    static func makeMaterial(devicePublicKey: _RSA.Signing.PublicKey) throws -> PairRecordMaterial {
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let hostKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let issuerKey = Certificate.PrivateKey(rootKey)
        let now = EmulatorClock.now()
        let notBefore = now.addingTimeInterval(-60)
        let notAfter = now.addingTimeInterval(10 * 365 * 24 * 3600)
        let empty = DistinguishedName()

        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: [0]), publicKey: issuerKey.publicKey,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: empty, subject: empty,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            },
            issuerPrivateKey: issuerKey)
        let host = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: [0]),
            publicKey: Certificate.PublicKey(hostKey.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: empty, subject: empty,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
            },
            issuerPrivateKey: issuerKey)
        let devicePublic = Certificate.PublicKey(devicePublicKey)
        let device = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: [0]), publicKey: devicePublic,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: empty, subject: empty,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                SubjectKeyIdentifier(hash: devicePublic)
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
            },
            issuerPrivateKey: issuerKey)
        return PairRecordMaterial(
            rootCertificatePEM: try root.serializeAsPEM().pemString,
            rootPrivateKeyPEM: rootKey.pkcs8PEMRepresentation,
            hostCertificatePEM: try host.serializeAsPEM().pemString,
            hostPrivateKeyPEM: hostKey.pkcs8PEMRepresentation,
            deviceCertificatePEM: try device.serializeAsPEM().pemString)
    }

    /// A self-signed certificate for the device key, used for TLS when no pair record holds a
    /// DeviceCertificate (the clients never verify the server certificate, PROTOCOL.md §2.6).
    static func selfSignedDeviceCertificate(deviceKey: _RSA.Signing.PrivateKey) throws -> String {
        let key = Certificate.PrivateKey(deviceKey)
        let now = EmulatorClock.now()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: [1]), publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-60),
            notValidAfter: now.addingTimeInterval(10 * 365 * 24 * 3600),
            issuer: DistinguishedName(), subject: DistinguishedName(),
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
            },
            issuerPrivateKey: key)
        return try certificate.serializeAsPEM().pemString
    }

    /// True when the PEM certificate carries `publicKey` (the DeviceCertificate in a host-made pair
    /// record must contain the device's own key).
    static func certificate(_ pem: String, carries publicKey: _RSA.Signing.PublicKey) -> Bool {
        guard let certificate = try? Certificate(pemEncoded: pem) else { return false }
        return certificate.publicKey == Certificate.PublicKey(publicKey)
    }
}
