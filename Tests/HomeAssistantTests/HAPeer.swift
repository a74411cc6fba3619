import Foundation
import HomeAssistant
import Logging

/// A real Home Assistant 2024.3.3 on 127.0.0.1, started by `scripts/ha-peer.sh` in a temp dir on a
/// free port. ``shared`` is one instance per test process (started on first use, stopped at exit);
/// tests that stop the server make their own with ``start()``. A peer that cannot start fails
/// the test: there is no skip.
actor HAPeer {
    let directory: URL
    let port: Int
    private(set) var token: AccessToken
    private var running = true

    private init(directory: URL, port: Int, token: AccessToken) {
        self.directory = directory
        self.port = port
        self.token = token
    }

    /// The process-wide instance.
    static func shared() async throws -> HAPeer {
        try await SharedPeer.instance.get()
    }

    /// A fresh instance of its own; stop it with ``stop()``.
    static func start() async throws -> HAPeer {
        try await PeerProcess.run(["install"], deadline: .seconds(600))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-ha-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        // A free port can be taken between the probe and HA's bind: try a few.
        for _ in 0..<3 {
            let port = try PeerProcess.freePort()
            do {
                try await PeerProcess.run(["start", directory.path, "\(port)"], deadline: .seconds(120))
                let peer = HAPeer(directory: directory, port: port, token: try readToken(directory))
                StopAtExit.register(directory)
                return peer
            } catch {
                lastError = error
            }
        }
        throw lastError ?? PeerProcess.Failure(description: "Home Assistant did not start")
    }

    private static func readToken(_ directory: URL) throws -> AccessToken {
        AccessToken(try String(contentsOf: directory.appendingPathComponent("token"), encoding: .utf8))
    }

    nonisolated var baseURL: String { "http://127.0.0.1:\(port)/" }

    func options(
        token override: AccessToken? = nil, requestTimeout: Duration = .seconds(30),
        reconnect: ReconnectPolicy = ReconnectPolicy()
    ) throws -> ClientOptions {
        var logger = Logger(label: "homeassistant.tests")
        if ProcessInfo.processInfo.environment["HA_TEST_TRACE"] != nil { logger.logLevel = .trace }
        return ClientOptions(
            server: try ServerAddress(baseURL), token: override ?? token, requestTimeout: requestTimeout,
            reconnect: reconnect, logger: logger)
    }

    /// A connected client; close it at the end of the test.
    func connect() async throws -> HomeAssistantConnection {
        let connection = HomeAssistantConnection(options: try options())
        try await connection.connect()
        return connection
    }

    /// SIGTERM and wait.
    func stop() async throws {
        guard running else { return }
        try await PeerProcess.run(["stop", directory.path], deadline: .seconds(60))
        running = false
    }

    /// Start again on the same port and config dir (the token stays valid).
    func restart() async throws {
        try await PeerProcess.run(["start", directory.path, "\(port)"], deadline: .seconds(120))
        token = try Self.readToken(directory)
        running = true
    }

    /// Stop and delete the config dir.
    func discard() async throws {
        try await stop()
        StopAtExit.unregister(directory)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Starts the shared peer once, whoever asks first.
private actor SharedPeer {
    static let instance = SharedPeer()
    private var starting: Task<HAPeer, any Error>?

    func get() async throws -> HAPeer {
        if let starting { return try await starting.value }
        let task = Task { try await HAPeer.start() }
        starting = task
        return try await task.value
    }
}
