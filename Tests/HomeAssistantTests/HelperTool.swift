import Foundation

/// Runs a helper program with a deadline; output goes to a file, never to the test log, and only its
/// tail is shown when the program fails. (Home Assistant itself: TestSupport's HomeAssistantServer.)
enum HelperTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `executable` (e.g. openssl); throws with its output's tail when it fails or overruns
    /// `deadline`.
    static func run(_ executable: String, _ arguments: [String], deadline: Duration) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ha-test-tool-\(UUID().uuidString).log")
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
}
