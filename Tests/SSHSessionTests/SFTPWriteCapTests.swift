import Foundation
import HADeployCore
import SSHTestPeers
import SSHTransport
import TestSupport
import Testing

/// libssh ≥ 0.11 (Homebrew's) sends at most 32 KiB per `sftp_write` to a server without the
/// `limits@openssh.com` extension (OpenSSH < 8.7, every Cydia-era sshd) and returns the short count.
/// Before: hadeploy took a short write for a failure, so every SFTP upload of a file over 32 KiB to
/// such a server failed. Debian 12's libssh 0.10 writes whole chunks: this fails only against the
/// second generation (scripts/brew-gen-test.sh), and must pass against both.
@Suite("SFTP upload to a server without limits@openssh.com")
struct SFTPWriteCapTests {
    @Test("the no-limits peer's sftp-server announces every extension but limits@openssh.com")
    func peerDropsTheLimitsExtension() async throws {
        let scratch = try TestEnvironment.makeDirectory("hadeploy-nolimits")
        defer { TestEnvironment.remove(scratch) }
        // SSH_FXP_INIT, version 3. sftp-server answers only while its input is open (it exits at EOF
        // before it writes), hence the sleep.
        let initPacket = scratch.appendingPathComponent("init")
        try Data([0, 0, 0, 5, 1, 0, 0, 0, 3]).write(to: initPacket)
        let filter = TestEnvironment.scriptsDirectory.appendingPathComponent("sftp-server-nolimits").path
        let pipeline = "{ cat '\(initPacket.path)'; sleep 2; } | '\(filter)' /usr/lib/openssh/sftp-server"
        let result = try await TestEnvironment.run("/bin/sh", ["-c", pipeline])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("posix-rename@openssh.com"), "no VERSION reply: \(result.output)")
        #expect(!result.output.contains("limits@openssh.com"))
    }

    @Test("a 200 KiB file and a 32 KiB + 1 file arrive whole over SFTP, with progress to the last byte")
    func uploadLargerThanTheCap() async throws {
        let peer = try await SSHPeer.start(.noLimitsSFTP)
        defer { peer.stopAndClean() }
        let local = try TestEnvironment.makeDirectory("hadeploy-capsource")
        defer { TestEnvironment.remove(local) }
        let remote = try TestEnvironment.makeDirectory("hadeploy-capdest", ownedByTestUser: true)
        defer { TestEnvironment.remove(remote) }

        // Bytes that differ at every offset a lost or repeated 32 KiB block would shift.
        let big = Data((0..<(200 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let justOver = Data((0..<(32 * 1024 + 1)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
        try big.write(to: local.appendingPathComponent("big.bin"))
        try justOver.write(to: local.appendingPathComponent("just-over.bin"))
        // What makes it an app bundle to LocalTree.
        let infoPlist = Data("<plist version=\"1.0\"><dict/></plist>\n".utf8)
        try infoPlist.write(to: local.appendingPathComponent("Info.plist"))
        let tree = try LocalTree(root: local, in: TestHost.fileSystem)

        let reports = ProgressLog()
        var connection = try await SSHConnection.connect(try await peer.config())
        let method = try await SSHConnection.upload(
            tree: tree, into: remote.path, name: "App.app", method: .sftp, device: "test-nolimits",
            on: &connection, progress: { reports.append($0) })
        await connection.close()

        #expect(method == .sftp)
        let uploaded = remote.appendingPathComponent("App.app")
        #expect(try Data(contentsOf: uploaded.appendingPathComponent("big.bin")) == big)
        #expect(try Data(contentsOf: uploaded.appendingPathComponent("just-over.bin")) == justOver)
        let sent = reports.all.map(\.bytesSent)
        #expect(sent == sent.sorted(), "progress went backwards: \(sent)")
        #expect(sent.last == tree.totalBytes)
    }
}

/// Progress reports, collected from the upload's callback.
private final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var reports: [UploadProgress] = []

    func append(_ report: UploadProgress) { lock.withLock { reports.append(report) } }
    var all: [UploadProgress] { lock.withLock { reports } }
}
