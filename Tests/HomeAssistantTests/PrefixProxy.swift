import Foundation
import TestSupport

/// `scripts/ha/prefix_proxy.py`: the peer served over TLS (a fresh self-signed certificate) under
/// `/ha/`, as behind a reverse proxy; `chunked` makes it answer HTTP in chunked transfer coding.
/// Kill it with ``stop()``.
final class PrefixProxy: Sendable {
    let port: Int
    let caFile: String
    let directory: URL
    private let pid: Int32

    private init(port: Int, caFile: String, directory: URL, pid: Int32) {
        self.port = port
        self.caFile = caFile
        self.directory = directory
        self.pid = pid
    }

    static func start(upstreamPort: Int, chunked: Bool = false) async throws -> PrefixProxy {
        let directory = try temporaryDirectory("proxy")
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        try await HelperTool.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                "-subj", "/CN=hadeploy test", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ], deadline: .seconds(60))
        let portFile = directory.appendingPathComponent("port").path
        let process = Process()
        process.executableURL = HADeployBinary.repositoryRoot.appendingPathComponent(".venv-ha/bin/python")
        process.arguments =
            [
                HADeployBinary.repositoryRoot.appendingPathComponent("scripts/ha/prefix_proxy.py").path,
                "--upstream", "http://127.0.0.1:\(upstreamPort)", "--prefix", "/ha", "--cert", cert, "--key",
                key,
                "--port-file", portFile,
            ] + (chunked ? ["--chunked"] : [])
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while clock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return PrefixProxy(
                    port: port, caFile: cert, directory: directory, pid: process.processIdentifier)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(process.processIdentifier, SIGKILL)
        throw HelperTool.Failure(description: "prefix_proxy.py did not listen within 30 s")
    }

    /// SIGKILL: children of Foundation's Process start with SIGTERM blocked.
    func stop() {
        kill(pid, SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}
