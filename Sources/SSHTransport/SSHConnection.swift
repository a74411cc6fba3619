import Foundation
import Logging

/// An authenticated SSH connection whose host key matched the known_hosts file.
///
/// All libssh work runs on the connection's own queue, one call at a time, each under a deadline
/// from `SSHConnectionConfig.timeouts`. Released connections are freed; `close()` also says goodbye.
public final class SSHConnection: Sendable {
    public let config: SSHConnectionConfig
    /// The verified host key.
    public let hostKey: HostKeyInfo
    /// The server's identification, e.g. `SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10`.
    public let serverBanner: String
    let executor: SessionExecutor

    /// Why the watchdog closed this connection (a step overran its deadline), if it did.
    public var abortedReason: String? { executor.abortedReason }
    let session: SessionHandle
    /// Every line carries the device and its address, like MobileDevice's `device=… udid=…`.
    let logger: Logger

    private init(
        config: SSHConnectionConfig, executor: SessionExecutor, session: SessionHandle, hostKey: HostKeyInfo
    ) {
        self.config = config
        self.executor = executor
        self.session = session
        self.hostKey = hostKey
        self.serverBanner = session.serverBanner
        self.logger = Self.logger(for: config)
    }

    static func logger(for config: SSHConnectionConfig) -> Logger {
        var logger = Logger(label: "hadeploy.ssh")
        logger[metadataKey: "device"] = "\(config.name)"
        logger[metadataKey: "host"] = "\(config.address)"
        return logger
    }

    deinit {
        // Unblocks anything still waiting; ssh_free runs when the session handle goes.
        executor.abort(reason: "connection released")
    }

    /// Connects, verifies the host key (never accepting an unknown or changed one) and logs in.
    public static func connect(_ config: SSHConnectionConfig) async throws -> SSHConnection {
        let logger = Self.logger(for: config)
        logger.debug("connecting as \(config.user)\(config.legacyAlgorithms ? " (legacy algorithms)" : "")")
        let executor = SessionExecutor(device: config.name)
        do {
            let (session, key) = try await executor.run("connect", timeout: config.timeouts.connect + 2) {
                let session = try SessionHandle.connect(config: config, executor: executor)
                return (session, try session.verifyHostKey())
            }
            try await executor.run("authentication", timeout: config.timeouts.authentication) {
                try session.authenticate()
            }
            logger.debug("connected: \(session.serverBanner), host key \(key.keyType) \(key.fingerprint)")
            return SSHConnection(config: config, executor: executor, session: session, hostKey: key)
        } catch {
            logger.info("connect failed: \(error)")
            throw error
        }
    }

    /// Connects without logging in, to read the host key (for `hadeploy trust-host`).
    static func connectUnauthenticated(_ config: SSHConnectionConfig) async throws -> (
        SessionExecutor, SessionHandle
    ) {
        let executor = SessionExecutor(device: config.name)
        let session = try await executor.run("connect", timeout: config.timeouts.connect + 2) {
            try SessionHandle.connect(config: config, executor: executor)
        }
        return (executor, session)
    }

    /// Runs `command` through the login shell. `stdin` is the only way to pass secrets: it never shows
    /// in the remote process list. Output beyond `outputLimit` bytes per stream is dropped. With
    /// `holdStdinOpen`, the command's stdin is never closed from here: it reaches end-of-file only when
    /// the connection goes (hadeploy killed, interrupted, or timed out), which a long remote command
    /// can watch for to stop itself — without a terminal, sshd sends it no hangup.
    public func execute(
        _ command: String, stdin: Data? = nil, timeout: Double? = nil, step: String = "remote command",
        outputLimit: Int = 64 << 20, holdStdinOpen: Bool = false
    ) async throws -> SSHCommandOutput {
        let session = self.session
        // The step, not the command: a command line may name paths the user considers private.
        logger.debug("\(step)\(stdin == nil ? "" : " (stdin: \(stdin!.count) bytes)")")
        return try await executor.run(step, timeout: timeout ?? config.timeouts.command) {
            try session.execute(
                command, stdin: stdin, limit: outputLimit, step: step, holdStdinOpen: holdStdinOpen)
        }
    }

    /// Like `execute`, but a non-zero exit status throws `SSHError.remoteCommandFailed` with the
    /// command's stderr.
    @discardableResult
    public func run(
        _ command: String, stdin: Data? = nil, timeout: Double? = nil, step: String = "remote command"
    ) async throws -> SSHCommandOutput {
        let output = try await execute(command, stdin: stdin, timeout: timeout, step: step)
        guard output.succeeded else {
            throw SSHError.remoteCommandFailed(
                device: config.name, step: step, command: command, exitStatus: output.exitStatus,
                stderr: output.stderrText.isEmpty
                    ? output.stdoutText.prefix(2048).description : output.stderrText)
        }
        return output
    }

    /// Whether the server is OpenSSH (needed for UNIX socket forwarding).
    public var isOpenSSH: Bool { serverBanner.contains("OpenSSH") }

    /// Sends a polite disconnect (bounded) and shuts the connection down.
    public func close() async {
        let session = self.session
        _ = try? await executor.run("disconnect", timeout: 3) {
            session.disconnect()
        }
        executor.abort(reason: "connection closed")
    }

    /// Runs a block with the raw session on the connection's queue (transfers, forwarding).
    func withSession<T: Sendable>(
        _ step: String, timeout: Double, _ body: @escaping @Sendable (SessionHandle) throws -> T
    ) async throws -> T {
        let session = self.session
        return try await executor.run(step, timeout: timeout) { try body(session) }
    }
}
