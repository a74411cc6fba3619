import Foundation
import SSHTestPeers
import TestSupport
import Testing

@testable import SSHTransport

@Suite("Host key verification against real sshd")
struct HostKeyTests {
    @Test("an unknown host is refused with its SHA256 fingerprint and the trust-host command")
    func unknownHostIsRefused() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let knownHosts = peer.directory.appendingPathComponent("empty/known_hosts").path
        let config = try await peer.config(name: "ipad2", knownHosts: knownHosts)
        let fingerprints = try await peer.fingerprints()

        let error = await #expect(throws: SSHError.self) { try await SSHConnection.connect(config) }
        guard case .unknownHostKey(_, _, _, let fingerprint, _) = error else {
            Issue.record("expected unknownHostKey, got \(String(describing: error))")
            return
        }
        #expect(fingerprints.contains(fingerprint))
        let message = error?.description ?? ""
        #expect(message.contains(fingerprint) && message.contains("hadeploy trust-host ipad2"))
        #expect(!FileManager.default.fileExists(atPath: knownHosts), "a refused host must not be written")

        // trust-host: scan shows the same key, trusting it with that fingerprint allows the login.
        let scanned = try await HostKeyTrust.scan(config)
        #expect(scanned.status == .unknown && scanned.fingerprint == fingerprint)
        let trusted = try await HostKeyTrust.trust(config, expectedFingerprint: scanned.fingerprint)
        #expect(trusted.status == .trusted)
        let written = try String(contentsOfFile: knownHosts, encoding: .utf8)
        #expect(written.contains("[127.0.0.1]:\(peer.port) "))
        // Which hosts this user deploys to is nobody else's business.
        let mode =
            try FileManager.default.attributesOfItem(atPath: knownHosts)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        let connection = try await SSHConnection.connect(config)
        #expect(connection.hostKey.status == .trusted)
        let output = try await connection.run("echo hello")
        #expect(output.stdoutText == "hello\n")
        await connection.close()
    }

    @Test("trust-host writes nothing when the server shows another key than the one confirmed")
    func trustRefusesUnexpectedFingerprint() async throws {
        let peer = try await SSHPeer.start(.dropbear)
        defer { peer.stopAndClean() }
        let knownHosts = peer.directory.appendingPathComponent("kh/known_hosts").path
        let config = try await peer.config(knownHosts: knownHosts)
        await #expect(throws: SSHError.self) {
            try await HostKeyTrust.trust(config, expectedFingerprint: "SHA256:somethingElse")
        }
        #expect(!FileManager.default.fileExists(atPath: knownHosts))
    }

    @Test("a changed host key is refused loudly; trust-host only replaces it when asked")
    func changedHostKeyIsRefused() async throws {
        let peer = try await SSHPeer.start(.legacy)
        defer { peer.stopAndClean() }
        // Trust a different RSA key for the same address, as after a server reinstall (or an attack).
        let other = peer.directory.appendingPathComponent("other_rsa").path
        try await TestEnvironment.run(
            "/usr/bin/ssh-keygen", ["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", other])
        let otherKey = try String(contentsOfFile: other + ".pub", encoding: .utf8).split(separator: " ")
        let knownHosts = peer.directory.appendingPathComponent("known_hosts_changed").path
        try "[127.0.0.1]:\(peer.port) \(otherKey[0]) \(otherKey[1])\n".write(
            toFile: knownHosts, atomically: true, encoding: .utf8)
        let config = try await peer.config(knownHosts: knownHosts)

        let error = await #expect(throws: SSHError.self) { try await SSHConnection.connect(config) }
        guard case .hostKeyChanged = error else {
            Issue.record("expected hostKeyChanged, got \(String(describing: error))")
            return
        }
        #expect(error?.description.contains("HAS CHANGED") == true)
        #expect(!peer.log.contains("Accepted"), "nothing may be sent to a server with a changed key")

        let scanned = try await HostKeyTrust.scan(config)
        #expect(scanned.status == .changed)
        await #expect(throws: SSHError.self) {
            try await HostKeyTrust.trust(config, expectedFingerprint: scanned.fingerprint)
        }
        _ = try await HostKeyTrust.trust(config, expectedFingerprint: scanned.fingerprint, replace: true)
        let connection = try await SSHConnection.connect(config)
        #expect(try await connection.run("echo ok").stdoutText == "ok\n")
        await connection.close()
    }

    @Test("removing entries also finds hashed known_hosts lines")
    func removesHashedEntries() async throws {
        let directory = try TestEnvironment.makeDirectory("hadeploy-kh")
        defer { TestEnvironment.remove(directory) }
        let path = directory.appendingPathComponent("known_hosts").path
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
        try "[10.0.0.5]:2222 \(key)\nother.example \(key)\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        // Let ssh-keygen hash it, so the hashed format comes from OpenSSH itself.
        try await TestEnvironment.run("/usr/bin/ssh-keygen", ["-H", "-f", path])
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("|1|"))
        let removed = try KnownHostsFile.removeEntries(
            host: "10.0.0.5", port: 2222, path: path, fileSystem: TestHost.fileSystem)
        #expect(removed == 1)
        let lookup = try await TestEnvironment.run(
            "/usr/bin/ssh-keygen", ["-F", "other.example", "-f", path])
        #expect(lookup.status == 0)
    }
}
