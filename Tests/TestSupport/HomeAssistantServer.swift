import Foundation
import HADeployCore

/// A real Home Assistant 2024.3.3 on 127.0.0.1, run by `scripts/ha-peer.sh` (venv install, headless
/// onboarding, long-lived token) in a temporary directory on a free port. ``shared()`` is one server
/// per test process (started on first use, stopped at exit); a test that stops or restarts the
/// server starts its own with ``start()`` and ends it with ``discard()``. It must start: a test that
/// needs it fails when it cannot, it never skips.
public final class HomeAssistantServer: @unchecked Sendable {
    public let directory: URL
    public let port: Int
    // Guarded by `lock`: re-read after a restart.
    private let lock = NSLock()
    private var currentToken: String

    /// The long-lived access token (ha-peer.sh keeps a still-valid one across restarts).
    public var token: String { lock.withLock { currentToken } }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    public var url: String { "http://127.0.0.1:\(port)" }

    private init(directory: URL, port: Int, token: String) {
        self.directory = directory
        self.port = port
        self.currentToken = token
    }

    static var script: String {
        HADeployBinary.repositoryRoot.appendingPathComponent("scripts/ha-peer.sh").path
    }

    /// The process-wide server, started by whoever asks first.
    public static func shared() async throws -> HomeAssistantServer {
        try await sharedServer.value
    }

    private static let sharedServer = Task<HomeAssistantServer, any Error> { try await start() }

    /// Installs (once) and starts a fresh server of its own on a free port. `packages`: Home
    /// Assistant packages (name → YAML, e.g. an automation and its input_boolean) that this server
    /// alone loads at start, from `packages/<name>.yaml` in its config directory.
    public static func start(packages: [String: String] = [:]) async throws -> HomeAssistantServer {
        try await peer(["install"], timeout: .seconds(900))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-ha-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if !packages.isEmpty {
            let folder = directory.appendingPathComponent("packages")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (name, yaml) in packages {
                try yaml.write(
                    to: folder.appendingPathComponent("\(name).yaml"), atomically: true, encoding: .utf8)
            }
        }
        AtExit.register(directory) {
            // At exit: no async runner, a plain blocking `ha-peer.sh stop`.
            let process = try? ChildProcess(
                executable: "/bin/bash", arguments: [script, "stop", directory.path],
                standardOutput: .nullDevice, standardError: .nullDevice)
            while process?.isRunning == true { usleep(10_000) }
        }
        var lastError: (any Error)?
        // A free port can be taken between the probe and HA's bind: try a few.
        for _ in 0..<3 {
            let port = try FreePort.pick()
            do {
                try await peer(["start", directory.path, "\(port)"], timeout: .seconds(180))
                return HomeAssistantServer(directory: directory, port: port, token: try readToken(directory))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CancellationError()
    }

    /// SIGTERM and wait (nothing to do when it is not running).
    public func stop() async throws {
        try await Self.peer(["stop", directory.path], timeout: .seconds(60))
    }

    /// Starts again on the same port and config directory.
    public func restart() async throws {
        try await Self.peer(["start", directory.path, "\(port)"], timeout: .seconds(180))
        let token = try Self.readToken(directory)
        lock.withLock { currentToken = token }
    }

    /// Stops the server and deletes its config directory.
    public func discard() async throws {
        try await stop()
        AtExit.unregister(directory)
        try? FileManager.default.removeItem(at: directory)
    }

    private static func readToken(_ directory: URL) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs the script with a deadline. The peer stops itself when this test process dies without
    /// stopping it (HA_PEER_WATCH_PID); the script never prints the token.
    private static func peer(_ arguments: [String], timeout: Duration) async throws {
        _ = try await TestHost.runner.checked(
            ProcessCommand(script, arguments, environment: ["HA_PEER_WATCH_PID": "\(getpid())"]),
            timeout: timeout)
    }
}
