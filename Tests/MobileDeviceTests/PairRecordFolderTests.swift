import Foundation
import TestSupport
import Testing

@testable import MobileDevice

#if canImport(Glibc)
    import Glibc
#endif

/// hadeploy's own pair records (`hadeploy pair`, the Wi-Fi runs, the muxer): only this user's
/// regular files, of a record's size and shape, in a folder no one else can change.
@Suite struct PairRecordFolderTests {
    static func folder(_ mode: mode_t = 0o700) throws -> URL {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "records-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        chmod(folder.path, mode)
        return folder
    }

    static func record() throws -> Data {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        return try PropertyListSerialization.data(
            fromPropertyList: [
                "HostID": "4E1B0F0A-1C2D-4E5F-8A9B-0C1D2E3F4A5B", "SystemBUID": "BUID",
                "HostCertificate": Data(pem.utf8), "DeviceCertificate": Data(pem.utf8),
                "RootCertificate": Data(pem.utf8),
                "HostPrivateKey": Data(
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n".utf8),
            ], format: .xml, options: 0)
    }

    @Test func onlyARegularFileShapedAsARecordIsRead() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let records = PairRecordFolder(folder: folder, fileSystem: TestHost.fileSystem)
        let record = try Self.record()
        records.save(udid: "good", record: record)
        #expect(records.read(udid: "good") == record)

        try Data("not a plist at all".utf8).write(to: folder.appendingPathComponent("garbage.plist"))
        #expect(records.read(udid: "garbage") == nil)
        try PropertyListSerialization.data(fromPropertyList: ["HostID": "X"], format: .xml, options: 0).write(
            to: folder.appendingPathComponent("partial.plist"))
        #expect(records.read(udid: "partial") == nil, "a plist without the certificates is no record")

        let elsewhere = try Self.folder()
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try record.write(to: elsewhere.appendingPathComponent("target.plist"))
        #expect(
            symlink(
                elsewhere.appendingPathComponent("target.plist").path,
                folder.appendingPathComponent("link.plist").path) == 0)
        #expect(records.read(udid: "link") == nil, "a link is not read")

        // A record of 2 GB (sparse: no disk) is refused by its size, never read into memory.
        let huge = folder.appendingPathComponent("huge.plist").path
        let fd = open(huge, O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0 && ftruncate(fd, 2 << 30) == 0)
        close(fd)
        #expect(records.read(udid: "huge") == nil)
    }

    @Test func aFolderOthersCanChangeOrThatIsNoFolderIsRefused() throws {
        let open = try Self.folder(0o777)
        defer { try? FileManager.default.removeItem(at: open) }
        let records = PairRecordFolder(folder: open, fileSystem: TestHost.fileSystem)
        #expect(
            records.problem()?.contains("can be changed by other users (mode 777)") == true,
            "\(records.problem() ?? "")")
        #expect(throws: MobileDeviceError.self) { try records.requireUsable(step: "test") }
        records.save(udid: "x", record: try Self.record())
        #expect(!FileManager.default.fileExists(atPath: open.appendingPathComponent("x.plist").path))
        var status = stat()
        #expect(
            stat(open.path, &status) == 0 && status.st_mode & 0o777 == 0o777, "its mode is left as it was")

        let file = open.deletingLastPathComponent().appendingPathComponent(
            "records-file-\(UUID().uuidString.prefix(8))")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let notAFolder = PairRecordFolder(folder: file, fileSystem: TestHost.fileSystem)
        #expect(notAFolder.problem()?.contains("is not a folder") == true)
    }
}
