import COpenSSL
import Foundation

/// An OpenSSL memory BIO, freed with its owner: PEM text in and out of OpenSSL.
final class MemoryBIO {
    let handle: OpaquePointer

    /// An empty BIO to write into.
    init() throws {
        guard let bio = BIO_new(BIO_s_mem()) else { throw HostCryptoError.openSSL("BIO_new") }
        handle = bio
    }

    /// A BIO holding a copy of `text`'s UTF-8 bytes, to read from.
    convenience init(reading text: String) throws {
        try self.init(reading: Data(text.utf8))
    }

    init(reading data: Data) throws {
        let bytes = [UInt8](data)
        guard let bio = BIO_new(BIO_s_mem()) else { throw HostCryptoError.openSSL("BIO_new") }
        handle = bio
        guard bytes.isEmpty || BIO_write(bio, bytes, Int32(bytes.count)) == Int32(bytes.count) else {
            throw HostCryptoError.openSSL("BIO_write")
        }
    }

    deinit { BIO_free(handle) }

    /// What `write` puts into a fresh BIO (it returns 1 on success, as OpenSSL's writers do).
    static func text(of operation: String, writing write: (OpaquePointer) -> Int32) throws -> String {
        let bio = try MemoryBIO()
        guard write(bio.handle) == 1 else { throw HostCryptoError.openSSL(operation) }
        return bio.text
    }

    /// Everything written so far, as bytes (DER).
    var data: Data {
        var pointer: UnsafeMutablePointer<CChar>?
        let count = hadeploy_BIO_get_mem_data(handle, &pointer)
        guard let pointer, count > 0 else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// Everything written so far, as text (PEM is ASCII).
    var text: String {
        var pointer: UnsafeMutablePointer<CChar>?
        let count = hadeploy_BIO_get_mem_data(handle, &pointer)
        guard let pointer, count > 0 else { return "" }
        return String(
            decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
