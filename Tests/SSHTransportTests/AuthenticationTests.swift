import Foundation
import HADeployCore
import SSHTestPeers
import Testing

@testable import HADeployDrivers
@testable import SSHTransport

@Suite("Authentication against real sshd and dropbear")
struct AuthenticationTests {
    @Test(
        "ed25519 and RSA keys log in to modern OpenSSH and dropbear",
        arguments: [SSHPeer.Kind.modern, .dropbear])
    func keysWork(kind: SSHPeer.Kind) async throws {
        let peer = try await SSHPeer.start(kind)
        defer { peer.stopAndClean() }
        for key in [TestEnvironment.ed25519Key, TestEnvironment.rsaKey] {
            let connection = try await SSHConnection.connect(
                try await peer.config(authentication: .privateKey(path: key, passphrase: nil)))
            #expect(try await connection.run("id -un").stdoutText == "\(TestEnvironment.user)\n")
            await connection.close()
        }
    }

    @Test("keys from an ssh-agent log in")
    func agentWorks() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let socket = peer.directory.appendingPathComponent("agent.sock").path
        let agent = try TestEnvironment.spawn(
            "/usr/bin/ssh-agent", ["-D", "-a", socket],
            outputPath: peer.directory.appendingPathComponent("agent.log").path)
        defer {
            kill(agent, SIGTERM)
            _ = TestEnvironment.wait(agent, timeout: 5)
        }
        // ssh-agent makes its socket when it has started: up to 10 s on a loaded machine (2 s was not
        // always enough while other suites built). The file exists from its bind, a moment before the
        // agent listens; ssh-add exits 2 when no agent answers there, so it is asked again meanwhile.
        for _ in 0..<1000 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(10))
        }
        var added = try await TestEnvironment.run(
            "/usr/bin/ssh-add", [TestEnvironment.rsaKey], environment: ["SSH_AUTH_SOCK": socket])
        for _ in 0..<50 where added.status == 2 {
            try await Task.sleep(for: .milliseconds(100))
            added = try await TestEnvironment.run(
                "/usr/bin/ssh-add", [TestEnvironment.rsaKey], environment: ["SSH_AUTH_SOCK": socket])
        }
        #expect(added.status == 0, "\(added)")
        let connection = try await SSHConnection.connect(
            try await peer.config(authentication: .agent(socketPath: socket)))
        #expect(try await connection.run("echo agent").stdoutText == "agent\n")
        await connection.close()
    }

    @Test("the legacy-only server needs legacyAlgorithms; with it an RSA key logs in (SHA-1 signature retry)")
    func legacyServer() async throws {
        let peer = try await SSHPeer.start(.legacy)
        defer { peer.stopAndClean() }
        let modernClient = try await peer.config(legacy: false)
        let error = await #expect(throws: SSHError.self) { try await SSHConnection.connect(modernClient) }
        #expect(error?.description.contains("legacy_algorithms: true") == true)

        let connection = try await SSHConnection.connect(try await peer.config(legacy: true))
        #expect(try await connection.run("echo legacy").stdoutText == "legacy\n")
        await connection.close()
        // The server's own log shows the SHA-1 user signature it accepted.
        #expect(peer.log.contains("Accepted publickey for \(TestEnvironment.user)"))

        // ed25519 is not accepted by this server: a clear error, not a hang.
        let denied = await #expect(throws: SSHError.self) {
            try await SSHConnection.connect(
                try await peer.config(
                    authentication: .privateKey(path: TestEnvironment.ed25519Key, passphrase: nil)))
        }
        guard case .authenticationFailed = denied else {
            Issue.record("expected authenticationFailed, got \(String(describing: denied))")
            return
        }
    }

    @Test("password login works; a wrong password fails once, clearly, without showing it")
    func passwordLogin() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let password = UUID().uuidString
        try await TestEnvironment.run(
            "/usr/sbin/chpasswd", [], stdin: "\(TestEnvironment.user):\(password)\n")
        defer {
            _ = try? TestEnvironment.runBlocking(
                "/usr/sbin/chpasswd", [], stdin: "\(TestEnvironment.user):\(UUID().uuidString)\n")
        }
        let good = try await peer.config(authentication: .password(Secret(password)))
        let connection = try await SSHConnection.connect(good)
        #expect(try await connection.run("echo pw").stdoutText == "pw\n")
        await connection.close()

        let wrongPassword = "wrong-\(UUID().uuidString)"
        let bad = try await peer.config(authentication: .password(Secret(wrongPassword)))
        let error = await #expect(throws: SSHError.self) { try await SSHConnection.connect(bad) }
        guard case .authenticationFailed = error else {
            Issue.record("expected authenticationFailed, got \(String(describing: error))")
            return
        }
        let message = error?.description ?? ""
        #expect(!message.contains(wrongPassword) && !message.contains(password))
        #expect(!"\(bad)".contains(wrongPassword))
        // Exactly one attempt reached the server: no retry storm.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !peer.log.contains("Failed password") {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(
            peer.log.components(separatedBy: "Failed password for \(TestEnvironment.user)").count - 1 == 1)
    }

    @Test("a missing key file is reported as such")
    func missingKey() async throws {
        let peer = try await SSHPeer.start(.dropbear)
        defer { peer.stopAndClean() }
        let config = try await peer.config(
            authentication: .privateKey(path: "/nonexistent/id_ed25519", passphrase: nil))
        let error = await #expect(throws: SSHError.self) { try await SSHConnection.connect(config) }
        guard case .keyUnreadable = error else {
            Issue.record("expected keyUnreadable, got \(String(describing: error))")
            return
        }
    }
}
