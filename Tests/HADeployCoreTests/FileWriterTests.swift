import Foundation
import HADeployCore
import TestSupport
import Testing

@Suite struct FileWriterTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "hadeploy-writer-\(UUID().uuidString)")

    func modificationDate(_ url: URL) throws -> Date {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date)
    }

    @Test func writesOnlyWhenTheContentChanges() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("nested/dir/project.yml")
        let writer = FileWriter(fileSystem: TestHost.fileSystem)
        #expect(writer.outcome(writing: Data("a".utf8), to: url) == .created)
        #expect(try writer.write(Data("a".utf8), to: url) == .created)
        #expect(try String(contentsOf: url, encoding: .utf8) == "a")

        // Backdate the file so an unwanted rewrite would show in the modification date.
        let past = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: url.path)
        #expect(writer.outcome(writing: Data("a".utf8), to: url) == .unchanged)
        #expect(try writer.write(Data("a".utf8), to: url) == .unchanged)
        #expect(try modificationDate(url) == past)

        #expect(writer.outcome(writing: Data("b".utf8), to: url) == .updated)
        #expect(try String(contentsOf: url, encoding: .utf8) == "a", "outcome(writing:) must not write")
        #expect(try writer.write(Data("b".utf8), to: url) == .updated)
        #expect(try String(contentsOf: url, encoding: .utf8) == "b")
        #expect(try modificationDate(url) > past)
    }

    @Test func replacesTheFileAtomicallyLeavingNoTemporaryFiles() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("ExportOptions.plist")
        try FileWriter(fileSystem: TestHost.fileSystem).write(Data("one".utf8), to: url)
        let before = try #require(
            FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? Int)
        try FileWriter(fileSystem: TestHost.fileSystem).write(Data("two".utf8), to: url)
        let after = try #require(
            FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? Int)
        // A rename puts a new inode in place; an in-place write would keep the old one half-written.
        #expect(before != after)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["ExportOptions.plist"])
    }
}
