import Foundation
import TestSupport
import Testing
import ZIPFoundation

@testable import MobileDevice

/// The one `.ipa` reader: one app per archive, the end record looked for only where the format puts
/// it, no FIFO opened, and unpacks capped, never through or to a link outside the bundle.
@Suite struct IPAArchiveTests {
    func reason(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch let error as MobileDeviceError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }

    /// An archive with two apps was read as the first and unpacked (for SSH) as whichever came last.
    @Test func anIpaWithTwoAppsIsRefusedNamingBoth() throws {
        let directory = try temporaryDirectory("two-apps")
        defer { try? FileManager.default.removeItem(at: directory) }
        let payload = directory.appendingPathComponent("stage/Payload")
        try FileManager.default.createDirectory(at: payload, withIntermediateDirectories: true)
        _ = try TestApps.makeApp(TestApps.Spec(), in: payload)
        var other = TestApps.Spec()
        other.name = "Other"
        other.bundleID = "io.hadeploy.other"
        _ = try TestApps.makeApp(other, in: payload)
        let ipa = directory.appendingPathComponent("two.ipa")
        try FileManager.default.zipItem(at: payload, to: ipa, shouldKeepParent: true)
        let expected = "it holds 2 apps (Payload/Demo.app, Payload/Other.app)"
        #expect(reason { _ = try AppArtifact.inspect(ipa) }.contains(expected))
        let target = directory.appendingPathComponent("unpacked")
        #expect(reason { _ = try IPAArchive.unpack(ipa, into: target) }.contains(expected))
        #expect(!FileManager.default.fileExists(atPath: target.path), "nothing is left of a refused unpack")
    }

    /// 150 MB that is no zip archive: ZIPFoundation scanned it backwards byte by byte (48 s).
    @Test(.timeLimit(.minutes(1))) func a150MBFileThatIsNoZipIsRefusedFromItsTail() throws {
        let directory = try temporaryDirectory("not-zip")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("download.ipa")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("<html>".utf8)))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 150 << 20)
        try handle.close()
        let started = ContinuousClock.now
        let why = reason { _ = try AppArtifact.inspect(file) }
        #expect(
            why.contains("it is not a zip archive (no end-of-central-directory record in its last 64 KiB)"),
            "\(why)")
        print("150 MB non-zip refused in \(ContinuousClock.now - started)")
    }

    @Test(.timeLimit(.minutes(1))) func aFIFOIsRefusedWithoutOpeningIt() throws {
        let directory = try temporaryDirectory("fifo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("app.ipa")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(reason { _ = try AppArtifact.inspect(fifo) }.contains("it is a FIFO (named pipe)"))
        // Inside a bundle, where the executable should be.
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        try FileManager.default.removeItem(at: app.appendingPathComponent("Demo"))
        #expect(mkfifo(app.appendingPathComponent("Demo").path, 0o600) == 0)
        #expect(reason { _ = try AppArtifact.inspect(app) }.contains("its executable Demo is missing"))
    }

    @Test func aSymlinkedAppIsReadAtItsRealPath() throws {
        let directory = try temporaryDirectory("linked")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory.appendingPathComponent("build"))
        let link = directory.appendingPathComponent("current.app")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: app)
        let inspected = try AppArtifact.inspect(link)
        #expect(inspected.url.path == app.resolvingSymlinksInPath().path)
        #expect(inspected.kind == .appDirectory)
        #expect(inspected.minimumOSVersion == "9.0")
    }

    @Test(arguments: ["/etc", "../../..", "Main.strings/../../../x", "/"])
    func aLinkInsideTheBundleThatLeadsOutIsRefused(destination: String) throws {
        let directory = try temporaryDirectory("link-out")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        try FileManager.default.createSymbolicLink(
            atPath: app.appendingPathComponent("Base.lproj/escape").path, withDestinationPath: destination)
        let why = reason { _ = try AppArtifact.inspect(app) }
        #expect(why.contains("its symbolic link 'Base.lproj/escape' leads outside the app"), "\(why)")
    }

    @Test func aLinkThatStaysInsideIsKept() throws {
        let directory = try temporaryDirectory("link-in")
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        try FileManager.default.createSymbolicLink(
            atPath: app.appendingPathComponent("Base.lproj/Current").path, withDestinationPath: "Main.strings"
        )
        #expect(try AppArtifact.inspect(app).bundleIdentifier == "io.hadeploy.test.demo")
    }

    @Test func unpackingGivesTheAppExactly() throws {
        let directory = try temporaryDirectory("unpack")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.payloadBytes = 100_000
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let bundle = try IPAArchive.unpack(ipa, into: directory.appendingPathComponent("unpacked"))
        #expect(bundle.lastPathComponent == "Demo.app")
        let original = try TestApps.makeApp(spec, in: directory.appendingPathComponent("again"))
        for path in ["Info.plist", "Base.lproj/Main.strings", "PkgInfo"] {
            #expect(
                FileManager.default.contents(atPath: bundle.appendingPathComponent(path).path)
                    == FileManager.default.contents(atPath: original.appendingPathComponent(path).path),
                "\(path)")
        }
        let size = try FileManager.default.attributesOfItem(
            atPath: bundle.appendingPathComponent("payload.bin").path)
        #expect((size[.size] as? NSNumber)?.intValue == 100_000)
        // A folder of its own: an existing one is never reused.
        #expect(
            reason { _ = try IPAArchive.unpack(ipa, into: directory.appendingPathComponent("unpacked")) }
                .contains("cannot be unpacked into"))
    }

    /// The probe: 3.1 MB that unpacked to 3.1 GB. Caps on entries and bytes, the numbers said.
    @Test func unpackingStopsAtTheCapsAndSaysThem() throws {
        let directory = try temporaryDirectory("caps")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.payloadBytes = 300_000
        let ipa = try TestApps.makeIPA(spec, in: directory)
        let target = directory.appendingPathComponent("out")
        let bytes = reason {
            _ = try IPAArchive.unpack(
                ipa, into: target, limits: .init(maximumEntries: 100, maximumBytes: 200_000))
        }
        #expect(bytes.contains("entries that unpack to 0.3 MiB"), "\(bytes)")
        #expect(bytes.contains("(limits: 100 entries, 0.2 MiB unpacked)"), "\(bytes)")
        let entries = reason {
            _ = try IPAArchive.unpack(
                ipa, into: target, limits: .init(maximumEntries: 3, maximumBytes: 1 << 30))
        }
        #expect(entries.contains("it has more than 3 entries"), "\(entries)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(IPAArchive.Limits.standard == .init(maximumEntries: 50_000, maximumBytes: 2 << 30))
    }

    /// An entry that declares a few bytes and inflates to a megabyte is stopped by what it really
    /// inflates to, not by what it declares.
    @Test func anEntryLyingAboutItsSizeIsStoppedByItsRealSize() throws {
        let directory = try temporaryDirectory("liar")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = directory.appendingPathComponent("liar.ipa")
        let archive = try Archive(url: ipa, accessMode: .create)
        let app = try TestApps.makeApp(TestApps.Spec(), in: directory)
        for name in ["Info.plist", "Demo"] {
            let data = try Data(contentsOf: app.appendingPathComponent(name))
            try archive.addEntry(
                with: "Payload/Demo.app/\(name)", type: .file, uncompressedSize: Int64(data.count),
                provider: { position, size in data.subdata(in: Int(position)..<Int(position) + size) })
        }
        let zeros = Data(count: 1 << 20)
        try archive.addEntry(
            with: "Payload/Demo.app/zeros", type: .file, uncompressedSize: Int64(zeros.count),
            compressionMethod: .deflate,
            provider: { position, size in zeros.subdata(in: Int(position)..<Int(position) + size) })
        // Rewrite the central directory's uncompressed size of `zeros` (offset 24 of its header) to 10.
        var bytes = try Data(contentsOf: ipa)
        let name = Data("Payload/Demo.app/zeros".utf8)
        var found = false
        var index = 0
        while let range = bytes.range(of: Data([0x50, 0x4B, 0x01, 0x02]), in: index..<bytes.count) {
            let start = range.lowerBound
            let nameLength = Int(bytes[start + 28]) | Int(bytes[start + 29]) << 8
            if bytes.subdata(in: start + 46..<start + 46 + nameLength) == name {
                bytes.replaceSubrange(start + 24..<start + 28, with: [10, 0, 0, 0])
                found = true
            }
            index = range.upperBound
        }
        #expect(found)
        try bytes.write(to: ipa)
        let why = reason {
            _ = try IPAArchive.unpack(
                ipa, into: directory.appendingPathComponent("out"),
                limits: .init(maximumEntries: 100, maximumBytes: 256 << 10))
        }
        #expect(why.contains("unpack") || why.contains("corrupt"), "\(why)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out").path))
    }

    /// Links in an archive: one leading out is refused; nothing is ever written beneath a link.
    @Test(arguments: [
        (["Payload/Demo.app/out": "../../../../etc"], "leads outside the app"),
        (["Payload/Demo.app/abs": "/etc"], "points to an absolute or unreadable path"),
        (["Payload/Demo.app/l": ".", "Payload/Demo.app/m": "l/.."], "leads outside the app"),
        (
            ["Payload/Demo.app/dir": "Base.lproj", "Payload/Demo.app/dir/x": "Main.strings"],
            "lies beneath the symbolic link"
        ),
    ])
    func hostileLinksInAnArchiveAreRefused(links: [String: String], says: String) throws {
        let directory = try temporaryDirectory("links")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = try TestApps.makeIPA(TestApps.Spec(), in: directory)
        let archive = try Archive(url: ipa, accessMode: .update)
        for (path, destination) in links.sorted(by: { $0.key < $1.key }) {
            let data = Data(destination.utf8)
            try archive.addEntry(
                with: path, type: .symlink, uncompressedSize: Int64(data.count),
                provider: { position, size in data.subdata(in: Int(position)..<Int(position) + size) })
        }
        let why = reason { _ = try IPAArchive.unpack(ipa, into: directory.appendingPathComponent("out")) }
        #expect(why.contains(says), "\(why)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out").path))
    }
}
