import Foundation
import HomeAssistant

#if canImport(Glibc)
    import Glibc
#endif

/// A real Home Assistant 2024.3.3 on loopback, started with `scripts/ha-peer.sh` (installs its venv on
/// first use). A peer that cannot start fails the test: there is no skip.
struct HomeAssistantPeer {
    let directory: URL
    let port: Int
    let token: AccessToken

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/ha-peer.sh").path
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func peer(_ arguments: [String], timeout: Double) async throws {
        let result = try await ToolRunner.run(
            path: script, arguments,
            // Stop HA when this test process goes away, whatever happens to the test.
            environment: ["HA_PEER_WATCH_PID": "\(getpid())"], timeout: timeout)
        guard result.status == 0, !result.timedOut else {
            throw Failure(description: "scripts/ha-peer.sh \(arguments.first ?? "") failed: \(result)")
        }
    }

    static func start() async throws -> HomeAssistantPeer {
        try await peer(["install"], timeout: 600)
        let directory = URL(fileURLWithPath: "/tmp/vdt-ha-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try freePort()
        try await peer(["start", directory.path, "\(port)"], timeout: 150)
        let token = try String(contentsOf: directory.appendingPathComponent("token"), encoding: .utf8)
        return HomeAssistantPeer(directory: directory, port: port, token: AccessToken(token))
    }

    func stop() async {
        try? await Self.peer(["stop", directory.path], timeout: 60)
        try? FileManager.default.removeItem(at: directory)
    }

    var url: String { "http://127.0.0.1:\(port)/" }

    func connect() async throws -> HomeAssistantConnection {
        let connection = HomeAssistantConnection(
            options: ClientOptions(server: try ServerAddress(url), token: token))
        try await connection.connect()
        return connection
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
