import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `scripts/ha/hostile_ha.py`: a server on 127.0.0.1 that authenticates like Home Assistant and then
/// misbehaves (`endless`: a message that never ends; `stall`: no answer at all; `error`: error
/// messages full of escape sequences and workflow commands; `ping`: a ping before each answer, which
/// waits for the pong). Kill it with ``stop()``.
public final class HostileHomeAssistant: Sendable {
    public enum Mode: String, Sendable {
        case endless, stall, error, ping, version
    }

    public let port: Int
    private let process: ChildProcess
    private let directory: URL

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, process: ChildProcess, directory: URL) {
        self.port = port
        self.process = process
        self.directory = directory
    }

    public static func start(_ mode: Mode) async throws -> HostileHomeAssistant {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-hostile-ha-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port").path
        let process = try ChildProcess(
            executable: "/usr/bin/python3",
            arguments: [
                HADeployBinary.repositoryRoot.appendingPathComponent("scripts/ha/hostile_ha.py").path,
                mode.rawValue,
                "--port-file", portFile,
            ],
            standardOutput: .nullDevice, standardError: .nullDevice)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while clock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) {
                return HostileHomeAssistant(port: port, process: process, directory: directory)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.signal(SIGKILL)
        throw Failure(description: "hostile_ha.py did not listen within 30 s")
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// SIGKILL: children of Foundation's Process start with SIGTERM blocked.
    public func stop() {
        process.signal(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}
