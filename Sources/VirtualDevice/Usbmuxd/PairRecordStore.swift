import Foundation
import HADeployCore
import NIOConcurrencyHelpers

/// The virtual usbmuxd's pair-record directory (real usbmuxd: /var/lib/lockdown/<UDID>.plist).
final class PairRecordStore: Sendable {
    let directory: URL
    /// The host's system BUID (ReadBUID), made up once and kept.
    let systemBUID: String
    private let fileSystem: any FileSystem
    private let lock = NIOLock()
    /// The DeviceCertificate last read from each record, with the record's bytes it came from.
    private let certificates = NIOLockedValueBox<[String: (record: Data, certificate: Data?)]>([:])

    init(directory: URL, fileSystem: any FileSystem) throws {
        self.directory = directory
        self.fileSystem = fileSystem
        // Pair records hold the host's private key: owner-only, as real usbmuxd keeps /var/lib/lockdown.
        try fileSystem.createPrivateDirectory(at: directory)
        let configuration = directory.appendingPathComponent("SystemConfiguration.plist")
        if let data = fileSystem.contents(atPath: configuration.path),
            let dictionary = try? PropertyList.dictionary(from: data),
            let buid = dictionary["SystemBUID"] as? String
        {
            systemBUID = buid
        } else {
            systemBUID = UUID().uuidString.uppercased()
            try fileSystem.writePrivately(PropertyList.xml(["SystemBUID": systemBUID]), to: configuration)
        }
    }

    private func url(for udid: String) -> URL {
        directory.appendingPathComponent(udid.replacingOccurrences(of: "/", with: "_") + ".plist")
    }

    /// The stored record as the client saved it (binary or XML plist), or nil.
    func read(udid: String) -> Data? {
        lock.withLock { fileSystem.contents(atPath: url(for: udid).path) }
    }

    func save(udid: String, record: Data) throws {
        try lock.withLock { try fileSystem.writePrivately(record, to: url(for: udid)) }
    }

    /// Removes the record; false if there was none.
    @discardableResult
    func delete(udid: String) -> Bool {
        lock.withLock { (try? fileSystem.removeItem(at: url(for: udid))) != nil }
    }

    /// The stored record's DeviceCertificate, or nil. Parsed again only when the record's bytes
    /// changed: every lockdown session asks (parsing it each time was 9 % of the twins' CPU in an
    /// unchanged deploy of 24).
    func deviceCertificate(udid: String) -> Data? {
        guard let record = read(udid: udid) else { return nil }
        if let known = certificates.withLockedValue({ $0[udid] }), known.record == record {
            return known.certificate
        }
        let certificate = (try? PropertyList.dictionary(from: record))?["DeviceCertificate"] as? Data
        certificates.withLockedValue { $0[udid] = (record, certificate) }
        return certificate
    }
}
