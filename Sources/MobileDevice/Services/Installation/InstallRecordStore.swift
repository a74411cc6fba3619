import Foundation
import HADeployCore

/// What hadeploy installed on a device, so an unchanged redeploy can be skipped.
struct InstallRecord: Codable, Equatable, Sendable {
    let bundleIdentifier: String
    let shortVersion: String?
    let bundleVersion: String
    let contentHash: String
    /// The `.ipa`'s size/mtime/inode when it was hashed (see `AppArtifact.fingerprint`).
    var fingerprint: String?
    let installedAt: Date
}

/// One small JSON file per device and bundle id: `<stateDirectory>/<UDID>/<bundle id>.json`.
/// (The device itself keeps no content hash that installation_proxy would return.)
struct InstallRecordStore: Sendable {
    let fileSystem: any FileSystem
    let directory: URL

    /// A record is a few hundred bytes; anything far larger is not one of ours (read no further).
    static let maxRecordBytes = 64 << 10

    /// The record, or nil when there is none or it is not a record (too large, damaged): then the app
    /// is installed again, which is always safe.
    func record(udid: String, bundleIdentifier: String) -> InstallRecord? {
        guard
            let data = try? TextFileReader(limit: Self.maxRecordBytes).readData(
                url(udid: udid, bundleIdentifier: bundleIdentifier).path)
        else {
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(InstallRecord.self, from: data)
    }

    func save(_ record: InstallRecord, udid: String) throws {
        let target = url(udid: udid, bundleIdentifier: record.bundleIdentifier)
        try fileSystem.createPrivateDirectory(at: target.deletingLastPathComponent())
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try fileSystem.writePrivately(encoder.encode(record), to: target)
    }

    func remove(udid: String, bundleIdentifier: String) {
        try? fileSystem.removeItem(at: url(udid: udid, bundleIdentifier: bundleIdentifier))
    }

    private func url(udid: String, bundleIdentifier: String) -> URL {
        directory.appendingPathComponent(safe(udid)).appendingPathComponent(safe(bundleIdentifier) + ".json")
    }

    private func safe(_ component: String) -> String {
        String(component.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" ? $0 : "_" })
    }
}
