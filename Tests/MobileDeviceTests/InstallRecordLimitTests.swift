import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import MobileDevice

/// Issue 25: an install record is a few hundred bytes of JSON, and was read whole whatever its size
/// (a 200 MB file: 200 MB read into memory on every deploy to that device).
struct InstallRecordLimitTests {
    /// The process's peak resident memory: a whole read of the file raises it by 200 MB.
    static func peakResidentBytes() -> Int {
        TestPlatform.peakResidentBytes()
    }

    @Test func aHugeRecordIsNotReadAndCountsAsNoRecord() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-records-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = InstallRecordStore(fileSystem: TestHost.fileSystem, directory: directory)
        let record = InstallRecord(
            bundleIdentifier: "com.example.hadashboard", shortVersion: "1.0", bundleVersion: "1",
            contentHash: "abc", fingerprint: nil, installedAt: Date(timeIntervalSince1970: 1_700_000_000))
        try store.save(record, udid: "UDID-1")
        #expect(store.record(udid: "UDID-1", bundleIdentifier: "com.example.hadashboard") == record)

        // 200 MB of JSON-looking bytes (written, not sparse: a read would really fetch them).
        let file = directory.appendingPathComponent("UDID-1/com.example.hadashboard.json")
        let handle = try FileHandle(forWritingTo: file)
        let chunk = Data(repeating: UInt8(ascii: " "), count: 1 << 20)
        for _ in 0..<200 { handle.write(chunk) }
        try handle.close()
        let before = Self.peakResidentBytes()
        #expect(store.record(udid: "UDID-1", bundleIdentifier: "com.example.hadashboard") == nil)
        #expect(Self.peakResidentBytes() - before < 64 << 20, "the file was read")
    }
}
