import DeployModel
import Foundation
import HADeployCore
import SSHTestPeers
import TestSupport
import Testing

@testable import HADeployDrivers
@testable import SSHTransport

@Suite("Deadlines and secrets on failure paths")
struct DeadlineTests {
    @Test("a remote command that outlives its deadline is cut off and reported, the connection closed")
    func commandDeadline() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let connection = try await SSHConnection.connect(try await peer.config(name: "ipad2"))
        let started = Date()
        let error = await #expect(throws: SSHError.self) {
            try await connection.execute("sleep 120", timeout: 1, step: "refreshing the icon cache")
        }
        // Cut off, not waited out: far below the command's 120 s, with room for a loaded machine
        // (the 1 s deadline itself is not what is measured here).
        #expect(Date().timeIntervalSince(started) < 60)
        guard case .timedOut(let device, let step, _) = error else {
            Issue.record("expected timedOut, got \(String(describing: error))")
            return
        }
        #expect(device == "ipad2" && step == "refreshing the icon cache")
        // The session is unusable afterwards and says so quickly instead of hanging.
        await #expect(throws: SSHError.self) { try await connection.execute("true", timeout: 5) }
    }

    @Test("a server that accepts TCP but never speaks SSH fails the connect at its deadline")
    func silentServer() async throws {
        let listener = socket(AF_INET, TestPlatform.streamSocket, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(listener, 4)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let config = SSHConnectionConfig(
            name: "silent", host: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port)),
            authentication: .agent(socketPath: nil), knownHostsPath: "/dev/null",
            fileSystem: TestHost.fileSystem,
            timeouts: SSHTimeouts(connect: 2))
        let started = Date()
        await #expect(throws: SSHError.self) { try await SSHConnection.connect(config) }
        // Without the deadline the connect waits forever; the bound leaves room for a loaded machine.
        #expect(Date().timeIntervalSince(started) < 60)
    }

    @Test("a failing launch command that echoes its stdin does not leak the token into the error")
    func launchErrorIsScrubbed() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let device = try DeviceRoot()
        defer { device.remove() }
        let app = try TestApp()
        defer { app.remove() }
        var config = device.deployConfig(try await peer.config())
        config.commands.launch = "cat >&2; exit 1"
        let token = "tok-\(UUID().uuidString)"
        let parameters = try DeployTests.launch(
            server: "http://ha", token: token, dashboard: .named("d"), kiosk: false, deployID: "x")
        let error = await #expect(throws: SSHError.self) {
            try await JailbreakDeployer(live: config).deploy(app: app.url, launch: parameters)
        }
        let message = error?.description ?? ""
        #expect(message.contains("-HAAccessToken"))
        #expect(!message.contains(token))
    }
}

@Suite("Paths from devices.yaml")
struct PathTests {
    @Test("a key path and known_hosts path starting with ~ are expanded")
    func tilde() {
        let config = SSHConnectionConfig(
            host: "10.0.0.5", authentication: .agent(socketPath: nil), knownHostsPath: "~/kh",
            fileSystem: TestHost.fileSystem)
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        #expect(config.expandTilde("~/.ssh/id_ed25519") == home + "/.ssh/id_ed25519")
        #expect(config.expandTilde("/etc/x") == "/etc/x")
        #expect(config.expandTilde("~other/x") == "~other/x")
        #expect(config.resolvedKnownHostsPath == home + "/kh")
        #expect(
            SSHConnectionConfig.expandTilde("~/x", home: URL(fileURLWithPath: "/home/ci")) == "/home/ci/x")
    }
}
