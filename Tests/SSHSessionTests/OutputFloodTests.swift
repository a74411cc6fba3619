import Foundation
import SSHTestPeers
import SSHTransport
import TestSupport
import Testing

/// A device whose command writes far more than hadeploy keeps. Before: 1.5 GB on stderr piled up in
/// libssh's channel buffer (only 32 KiB of stderr was read per round while the window stayed open) until
/// hadeploy crashed inside libssh.
@Suite(.serialized)
struct OutputFloodTests {
    static func connection() async throws -> (SSHConnection, SSHPeer) {
        try TestEnvironment.requireSetup()
        let peer = try await SSHPeer.start(.modern)
        let connection = try await SSHConnection.connect(
            try await peer.config(
                authentication: .privateKey(path: TestEnvironment.ed25519Key, passphrase: nil)))
        return (connection, peer)
    }

    @Test func aChattyCommandKeepsItsLimitAndEndsNormally() async throws {
        let (connection, peer) = try await Self.connection()
        defer { peer.stopAndClean() }
        let output = try await connection.execute(
            "head -c 40000000 /dev/zero >&2; echo done", timeout: 120, outputLimit: 1 << 20)
        #expect(output.exitStatus == 0)
        #expect(output.stdoutText == "done\n")
        #expect(output.stderr.count == 1 << 20, "stderr is kept up to the limit: \(output.stderr.count)")
        await connection.close()
    }

    @Test func aRunawayStderrIsStoppedWithAReasonAndBoundedMemory() async throws {
        let (connection, peer) = try await Self.connection()
        defer { peer.stopAndClean() }
        let before = TestPlatform.peakResidentBytes()
        let started = ContinuousClock.now
        let error = await #expect(throws: SSHError.self) {
            try await connection.execute(
                "head -c 1500000000 /dev/zero >&2", timeout: 300, outputLimit: 1 << 20)
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("wrote more than 258 MiB of output; stopped"))
        let grown = TestPlatform.peakResidentBytes() - before
        // The whole test process's peak (other suites run beside it): far below the 1.5 GB it took.
        #expect(grown < 512 << 20, "reading the flood grew the peak memory by \(grown >> 20) MiB")
        #expect(ContinuousClock.now - started < .seconds(240))
        await connection.close()
    }
}
