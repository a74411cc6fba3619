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
}
