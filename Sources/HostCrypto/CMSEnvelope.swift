import COpenSSL
import Foundation

/// The content of a CMS (PKCS #7) signed-data envelope, as an `embedded.mobileprovision` is: its
/// plist, taken out without checking Apple's signature (the device checks that; hadeploy reads what
/// the profile says to refuse early what the device would refuse late).
public enum CMSEnvelope {
    /// The envelope's encapsulated content (DER input); throws when `der` is no CMS structure or
    /// carries no content.
    public static func content(of der: Data) throws -> Data {
        let bio = try MemoryBIO(reading: der)
        guard let cms = d2i_CMS_bio(bio.handle, nil) else {
            throw HostCryptoError.openSSL("reading a CMS envelope")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard let slot = CMS_get0_content(cms), let octets = slot.pointee,
            let bytes = ASN1_STRING_get0_data(octets)
        else { throw HostCryptoError(operation: "reading a CMS envelope", reason: "it carries no content") }
        return Data(bytes: bytes, count: Int(ASN1_STRING_length(octets)))
    }

    /// `content` in a CMS signed-data envelope (DER, the content inside), signed by `key` with
    /// `certificate`: what `openssl cms -sign -nodetach -binary -outform DER` makes.
    public static func signed(_ content: Data, certificate: X509Certificate, key: RSAPrivateKey) throws
        -> Data
    {
        let input = try MemoryBIO(reading: content)
        guard let cms = CMS_sign(certificate.handle, key.handle, nil, input.handle, UInt32(CMS_BINARY)) else {
            throw HostCryptoError.openSSL("signing a CMS envelope")
        }
        defer { CMS_ContentInfo_free(cms) }
        let output = try MemoryBIO()
        guard i2d_CMS_bio(output.handle, cms) == 1 else {
            throw HostCryptoError.openSSL("writing a CMS envelope")
        }
        return output.data
    }

    /// `content` signed by a key and certificate made for it and then forgotten, as a stand-in for
    /// Apple's signature: a device checks that one, hadeploy and the twins read only the content.
    public static func signedByThrowawayIdentity(_ content: Data, now: Date) throws -> Data {
        let key = try RSAPrivateKey(generatingBits: 2048)
        let certificate = try X509Certificate(
            serialNumber: 1, publicKey: key.publicKey, notBefore: now.addingTimeInterval(-86_400),
            notAfter: now.addingTimeInterval(366 * 86_400),
            extensions: [.basicConstraints(certificateAuthority: false)], issuerKey: key)
        return try signed(content, certificate: certificate, key: key)
    }
}
