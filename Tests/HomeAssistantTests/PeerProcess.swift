import Foundation

/// Runs `scripts/ha-peer.sh` with a deadline; output goes to a file, never to the test log, so a
/// token can not leak into it (the script never prints one anyway).
enum PeerProcess {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let repoRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var script: String { repoRoot.appendingPathComponent("scripts/ha-peer.sh").path }

    /// Runs the script; throws with its output's tail when it fails or overruns `deadline`.
    static func run(_ arguments: [String], deadline: Duration) async throws {
        try await runTool("/bin/bash", [script] + arguments, deadline: deadline)
    }

    /// Runs any program the same way.
    static func runTool(_ executable: String, _ arguments: [String], deadline: Duration) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ha-peer-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        var environment = ProcessInfo.processInfo.environment
        // The peer stops itself if this test process dies without stopping it.
        environment["HA_PEER_WATCH_PID"] = "\(ProcessInfo.processInfo.processIdentifier)"
        process.environment = environment
        let exited = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { finished in
            exited.continuation.yield(finished.terminationStatus)
            exited.continuation.finish()
        }
        try process.run()
        let watchdog = Task {
            try await Task.sleep(for: deadline)
            process.terminate()
        }
        var status: Int32 = -1
        for await code in exited.stream { status = code }
        watchdog.cancel()
        guard status == 0 else {
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw Failure(
                description: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status)):\n"
                    + output.split(separator: "\n").suffix(25).joined(separator: "\n"))
        }
    }

    /// A TCP port nobody listens on right now (bind to 0, read it back, close).
    static func freePort() throws -> Int {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
