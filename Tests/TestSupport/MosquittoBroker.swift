import Foundation
import HADeployCore

/// A real Mosquitto (Debian's `mosquitto` package) on 127.0.0.1, started for a test with a config
/// file the test writes (never the system service): a user and password (the password hashed into
/// the broker's password file by this process, never on a command line), optionally a TLS listener
/// with a certificate made for it. It dies with the test process (a lifeline). A test that needs it
/// fails when Mosquitto is not installed (`scripts/bootstrap.sh --with-peers`).
public final class MosquittoBroker: @unchecked Sendable {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: URL
    public let port: Int
    public let user = "hadeploy"
    /// A fresh password per broker: the tests check it never shows.
    public let password = "mq-\(UUID().uuidString.prefix(12))"
    /// `--tls`: the self-signed certificate (PEM) the broker presents, for 127.0.0.1.
    public let certificate: URL?
    private var process: ChildProcess!
    private let lifeline: Lifeline

    public static let executable = "/usr/sbin/mosquitto"

    /// `tls`: the listener speaks TLS with a self-signed certificate for 127.0.0.1.
    public init(tls: Bool = false) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_sub")
        else {
            throw Missing(
                description: "Mosquitto is not installed: run scripts/bootstrap.sh --with-peers "
                    + "(apt-get install mosquitto mosquitto-clients)")
        }
        directory = try temporaryDirectory("mosquitto")
        port = try FreePort.pick()
        try Self.writePasswordFile(
            user: user, password: password, to: directory.appendingPathComponent("passwords"))
        var config = """
            per_listener_settings false
            allow_anonymous false
            password_file \(directory.appendingPathComponent("passwords").path)
            persistence false
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            user \(Self.userName())
            listener \(port) 127.0.0.1

            """
        if tls {
            let cert = directory.appendingPathComponent("broker.pem")
            let key = directory.appendingPathComponent("broker.key")
            let made = try await ToolRun.run(
                "openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.path, "-out", cert.path,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                ])
            guard made.status == 0 else { throw Missing(description: "openssl req failed: \(made.stderr)") }
            config += "certfile \(cert.path)\nkeyfile \(key.path)\n"
            certificate = cert
        } else {
            certificate = nil
        }
        let configFile = directory.appendingPathComponent("mosquitto.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)

        lifeline = try Lifeline(at: directory.appendingPathComponent("lifeline").path)
        let guarded = Lifeline.guarded(Self.executable, ["-c", configFile.path])
        let log = directory.appendingPathComponent("mosquitto.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        defer { try? logHandle.close() }
        guard let lifelineEnd = FileHandle(forReadingAtPath: lifeline.path) else {
            throw Missing(description: "cannot open the broker's lifeline \(lifeline.path)")
        }
        defer { try? lifelineEnd.close() }
        process = try ChildProcess(
            executable: guarded.executable, arguments: guarded.arguments,
            standardInput: .descriptor(lifelineEnd.fileDescriptor),
            standardOutput: .descriptor(logHandle.fileDescriptor),
            standardError: .descriptor(logHandle.fileDescriptor))
        for _ in 0..<200 {
            if !process.isRunning {
                throw Missing(description: "mosquitto exited at start: \(self.log)")
            }
            if Self.accepts(port: port) { return }
            try await TestHost.clock.sleep(for: .milliseconds(25))
        }
        stop()
        throw Missing(description: "mosquitto did not listen on \(port): \(self.log)")
    }

    /// `mqtt://user:password@127.0.0.1:port` (`mqtts://` for a TLS broker).
    public var url: String {
        "\(certificate == nil ? "mqtt" : "mqtts")://\(user):\(password)@127.0.0.1:\(port)"
    }

    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? ""
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// SIGSTOP: the kernel still completes TCP handshakes on its port, the broker answers nothing
    /// (a stuck broker). ``resume()`` lets it go on.
    public func pause() { process.signal(SIGSTOP) }

    public func resume() { process.signal(SIGCONT) }

    public func stop() {
        // SIGKILL: the port closing is what a test needs, and it does as the process dies.
        if let process, process.isRunning {
            process.signal(SIGKILL)
            for _ in 0..<200 where Self.accepts(port: port) { usleep(10_000) }
        }
        lifeline.cut()
    }

    deinit { stop() }

    /// Every retained message under `filter` (`homeassistant/#`), topic → payload, read with
    /// `mosquitto_sub` logged in through its options file (the password on no command line).
    public func retained(_ filter: String, seconds: Int = 2) async throws -> [String: Data] {
        let home = directory.appendingPathComponent("sub-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try "-u \(user)\n-P \(password)\n".write(
            to: home.appendingPathComponent("mosquitto_sub"), atomically: true, encoding: .utf8)
        // A process spawned from a test's worker thread inherits its blocked signals, SIGALRM among
        // them, and mosquitto_sub's -W timeout is an alarm: python3 clears the mask, then execs it.
        let output = try await ToolRun.run(
            "python3",
            [
                "-c",
                "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
                    + "os.execvp(sys.argv[1], sys.argv[1:])",
                "mosquitto_sub",
                "-h", "127.0.0.1", "-p", String(port), "-t", filter, "--retained-only", "-W", String(seconds),
                "-F", "%t\t%x",
            ]
                + (certificate.map { ["--cafile", $0.path] } ?? []),
            environment: ["XDG_CONFIG_HOME": home.path])
        // 27: the -W timeout, how a read of retained messages ends when nothing new comes.
        guard output.status == 0 || output.status == 27 else {
            throw Missing(description: "mosquitto_sub failed (\(output.status)): \(output.stderr)")
        }
        var messages: [String: Data] = [:]
        for line in output.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            messages[String(parts[0])] = Self.bytes(hex: String(parts[1]))
        }
        return messages
    }

    /// Publishes `text` to `topic` as another client would (`mosquitto_pub`, logged in through its
    /// options file: the password on no command line); an empty `text` is an empty message (`-n`),
    /// which with `retain` removes the retained one.
    public func publish(_ topic: String, _ text: String, retain: Bool = false) async throws {
        let home = directory.appendingPathComponent("pub-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try "-u \(user)\n-P \(password)\n".write(
            to: home.appendingPathComponent("mosquitto_pub"), atomically: true, encoding: .utf8)
        let output = try await ToolRun.run(
            "mosquitto_pub",
            ["-h", "127.0.0.1", "-p", String(port), "-t", topic, "-q", "1"]
                + (text.isEmpty ? ["-n"] : ["-m", text])
                + (retain ? ["-r"] : []) + (certificate.map { ["--cafile", $0.path] } ?? []),
            environment: ["XDG_CONFIG_HOME": home.path])
        guard output.status == 0 else {
            throw Missing(description: "mosquitto_pub failed (\(output.status)): \(output.stderr)")
        }
    }

    /// Retained text payloads under `filter`.
    public func retainedText(_ filter: String) async throws -> [String: String] {
        try await retained(filter).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    static func bytes(hex: String) -> Data {
        var data = Data(capacity: hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            if let byte = UInt8(hex[index..<next], radix: 16) { data.append(byte) }
            index = next
        }
        return data
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, TestPlatform.streamSocket, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    static func userName() -> String {
        ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (getuid() == 0 ? "root" : NSUserName())
    }

    /// Mosquitto's `$6$` entry (SHA-512 over the password and a random salt, both base64), written
    /// by this process: `mosquitto_passwd -b` would put the password on a command line.
    static func writePasswordFile(user: String, password: String, to file: URL) throws {
        let salt = (0..<12).map { _ in UInt8.random(in: 0...255) }
        let script = """
            import base64, hashlib, sys
            password = sys.stdin.buffer.read()
            salt = bytes.fromhex(sys.argv[1])
            digest = hashlib.sha512(password + salt).digest()
            sys.stdout.write("$6$" + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode())
            """
        let python = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", script, salt.map { String(format: "%02x", $0) }.joined()],
            standardInput: .pipe, standardError: .nullDevice)
        try python.standardInput?.write(contentsOf: Data(password.utf8))
        try python.standardInput?.close()
        let hash = String(
            decoding: python.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        while python.isRunning { usleep(5_000) }
        guard python.exitCode == 0, hash.hasPrefix("$6$") else {
            throw Missing(description: "could not hash the broker's password with python3")
        }
        try "\(user):\(hash)\n".write(to: file, atomically: true, encoding: .utf8)
    }
}
