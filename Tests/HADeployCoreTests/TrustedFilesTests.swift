import Foundation
import HADeployCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A script is run only when no one but its user (or root) could have written it or a folder above it.
struct TrustedFilesTests {
    static func script(in folder: URL) throws -> String {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = folder.appendingPathComponent("twin.sh").path
        #expect(FileManager.default.createFile(atPath: script, contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(script, 0o755) == 0)
        #expect(chmod(folder.path, 0o755) == 0)
        return script
    }

    static let me = UInt32(geteuid())

    @Test func aScriptOnlyItsUserCanChangeIsTrusted() throws {
        let root = try temporaryDirectory("trusted")
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(chmod(root.path, 0o755) == 0)
        let script = try Self.script(in: root.appendingPathComponent("share/hadeploy"))
        #expect(
            TrustedFiles.problem(paths: [script], userID: Self.me, fileSystem: TestHost.fileSystem) == nil)
    }

    /// The attack: a folder above the script that anyone may write, where another user puts a twin.sh.
    @Test func aFolderOthersCanWriteAboveTheScriptIsRefused() throws {
        let root = try temporaryDirectory("trusted")
        defer { try? FileManager.default.removeItem(at: root) }
        let script = try Self.script(in: root.appendingPathComponent("checkout/scripts"))
        #expect(chmod(root.appendingPathComponent("checkout").path, 0o777) == 0)
        let problem = TrustedFiles.problem(paths: [script], userID: Self.me, fileSystem: TestHost.fileSystem)
        #expect(
            problem?.contains("checkout can be changed by other users (mode 777)") == true, "\(problem ?? "")"
        )
    }

    @Test func aStickyFolderAboveIsFineButTheScriptItselfMayNotBeWritableByOthers() throws {
        let root = try temporaryDirectory("trusted")
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(chmod(root.path, 0o1777) == 0)
        let script = try Self.script(in: root.appendingPathComponent("mine"))
        #expect(
            TrustedFiles.problem(paths: [script], userID: Self.me, fileSystem: TestHost.fileSystem) == nil)
        #expect(chmod(script, 0o775) == 0)
        let problem = TrustedFiles.problem(paths: [script], userID: Self.me, fileSystem: TestHost.fileSystem)
        #expect(
            problem?.contains("twin.sh can be changed by other users (mode 775)") == true, "\(problem ?? "")")
    }

    /// Seen from another user: what this user owns is someone else's to that user.
    @Test func aScriptAnotherUserOwnsIsRefused() throws {
        guard Self.me != 0 else {
            // As root every file is root's or another user's; make one another user's.
            let root = try temporaryDirectory("trusted")
            defer { try? FileManager.default.removeItem(at: root) }
            let script = try Self.script(in: root.appendingPathComponent("planted"))
            #expect(chown(script, 65534, 65534) == 0)
            let problem = TrustedFiles.problem(paths: [script], userID: 0, fileSystem: TestHost.fileSystem)
            #expect(problem?.contains("belongs to another user (uid 65534)") == true, "\(problem ?? "")")
            return
        }
        let root = try temporaryDirectory("trusted")
        defer { try? FileManager.default.removeItem(at: root) }
        let script = try Self.script(in: root.appendingPathComponent("planted"))
        let problem = TrustedFiles.problem(
            paths: [script], userID: Self.me + 1, fileSystem: TestHost.fileSystem)
        #expect(problem?.contains("belongs to another user (uid \(Self.me))") == true, "\(problem ?? "")")
    }

    @Test func aLinkIsJudgedByWhereItPoints() throws {
        let root = try temporaryDirectory("trusted")
        defer { try? FileManager.default.removeItem(at: root) }
        let open = root.appendingPathComponent("open")
        let script = try Self.script(in: open)
        #expect(chmod(open.path, 0o777) == 0)
        let safe = root.appendingPathComponent("safe")
        try FileManager.default.createDirectory(at: safe, withIntermediateDirectories: true)
        #expect(chmod(safe.path, 0o755) == 0)
        let link = safe.appendingPathComponent("twin.sh").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: script)
        let problem = TrustedFiles.problem(paths: [link], userID: Self.me, fileSystem: TestHost.fileSystem)
        #expect(problem?.contains("open can be changed by other users") == true, "\(problem ?? "")")
    }
}
