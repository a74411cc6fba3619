import Foundation
import HADeployCore

/// A real Home Assistant 2024.3.3 on 127.0.0.1 for end-to-end tests, run by `scripts/ha-peer.sh`
/// (venv install, headless onboarding, long-lived token). It must start: a test that needs it fails
/// when it cannot, it never skips.
public final class HomeAssistantServer: Sendable {
    public let directory: URL
    public let port: Int
    public let token: String

    public var url: String { "http://127.0.0.1:\(port)" }

    private init(directory: URL, port: Int, token: String) {
        self.directory = directory
        self.port = port
        self.token = token
    }

    static var script: String {
        HADeployBinary.repositoryRoot.appendingPathComponent("scripts/ha-peer.sh").path
    }

    static func peer(_ arguments: [String], timeout: Duration) async throws {
        var environment: [String: String] = ["HA_PEER_WATCH_PID": "\(getpid())"]
        if let venv = ProcessInfo.processInfo.environment["HA_PEER_VENV"] {
            environment["HA_PEER_VENV"] = venv
        }
        _ = try await LiveProcessRunner().checked(
            ProcessCommand(script, arguments, environment: environment), timeout: timeout)
    }

    /// Installs (once) and starts a fresh server on a free port.
    public static func start() async throws -> HomeAssistantServer {
        try await peer(["install"], timeout: .seconds(900))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-e2e-ha-\(UUID().uuidString.prefix(8))")
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try FreePort.pick()
            do {
                try await peer(["start", directory.path, "\(port)"], timeout: .seconds(180))
                let token = try String(contentsOf: directory.appendingPathComponent("token"), encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                return HomeAssistantServer(directory: directory, port: port, token: token)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CancellationError()
    }

    /// SIGTERM and wait.
    public func stop() async throws {
        try await Self.peer(["stop", directory.path], timeout: .seconds(60))
    }

    /// Starts again on the same port and config (the token stays valid).
    public func restart() async throws {
        try await Self.peer(["start", directory.path, "\(port)"], timeout: .seconds(180))
    }
}

/// A TCP port nobody listens on right now.
public enum FreePort {
    public static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileReadUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
