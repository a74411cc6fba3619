import Foundation
import HostCrypto
import Testing

/// RSA keys and X.509 certificates: what the virtual twins keep on disk and present in pairing.
struct KeyAndCertificateTests {
    @Test func aDeviceKeyWrittenBeforeOpenSSLStillLoadsAndMatchesItsCertificate() throws {
        let key = try RSAPrivateKey(pem: LegacyTwinState.deviceKeyPEM)
        // Written back in the same PKCS#1 form, byte for byte.
        #expect(try key.pkcs1PEM == LegacyTwinState.deviceKeyPEM + "\n")
        let certificate = try X509Certificate(pem: LegacyTwinState.deviceCertificatePEM)
        #expect(certificate.carries(key.publicKey))
        #expect(!certificate.carries(try RSAPrivateKey(generatingBits: 2048).publicKey))
    }

    @Test func aKeySurvivesBothPEMForms() throws {
        let key = try RSAPrivateKey(generatingBits: 2048)
        let pkcs1 = try key.pkcs1PEM
        let pkcs8 = try key.pkcs8PEM
        #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----\n"))
        #expect(pkcs8.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(try RSAPrivateKey(pem: pkcs1).publicKey == key.publicKey)
        #expect(try RSAPrivateKey(pem: pkcs8).publicKey == key.publicKey)
        #expect(try key.publicKey.pkcs1PEM.hasPrefix("-----BEGIN RSA PUBLIC KEY-----\n"))
        #expect(try key.publicKey.subjectPublicKeyInfoPEM.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
    }

    @Test func badPEMIsAnErrorWithOpenSSLsReason() throws {
        let error = #expect(throws: HostCryptoError.self) { try RSAPrivateKey(pem: "not a key") }
        #expect(error?.description.hasPrefix("reading an RSA private key PEM failed: ") == true)
        #expect(throws: HostCryptoError.self) { try X509Certificate(pem: LegacyTwinState.deviceKeyPEM) }
    }

    @Test func aSignedCertificateCarriesTheSubjectKeyAndReadsBack() throws {
        let issuer = try RSAPrivateKey(generatingBits: 2048)
        let subject = try RSAPrivateKey(generatingBits: 2048)
        let made = try X509Certificate(
            serialNumber: 7, publicKey: subject.publicKey,
            notBefore: Date(timeIntervalSince1970: 1_700_000_000),
            notAfter: Date(timeIntervalSince1970: 2_000_000_000),
            extensions: [.basicConstraints(certificateAuthority: false)], issuerKey: issuer)
        let read = try X509Certificate(pem: try made.pem)
        #expect(read.carries(subject.publicKey))
        #expect(!read.carries(issuer.publicKey))
        #expect(try read.pem == made.pem)
    }
}
