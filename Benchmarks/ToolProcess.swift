import Foundation

/// Runs a Debian libimobiledevice tool (the peer being compared) against a usbmuxd socket, killed
/// at its deadline. Blocking reads happen on a GCD thread: on the 2-thread cooperative pool of a
/// 2-core machine they would starve an emulator running in this very process.
enum ToolProcess {
    struct Result {
        let status: Int32
        let output: String
        let timedOut: Bool
        let seconds: Double
    }

    static func run(_ tool: String, _ arguments: [String], socket: String, timeout: Duration) async throws
        -> Result
    {
        let path = "/usr/bin/\(tool)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchFailure("\(path) is missing: run scripts/idevice-tools.sh")
        }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: path)
                process.arguments = arguments
                var environment = ProcessInfo.processInfo.environment
                environment["USBMUXD_SOCKET_ADDRESS"] = socket
                process.environment = environment
                process.standardInput = FileHandle.nullDevice
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                let started = Date()
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: BenchFailure("could not start \(path): \(error)"))
                    return
                }
                let killed = LockedFlag()
                let timer = DispatchWorkItem {
                    killed.set()
                    kill(process.processIdentifier, SIGKILL)
                }
                DispatchQueue.global().asyncAfter(
                    deadline: .now() + Timing.seconds(timeout), execute: timer)
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                timer.cancel()
                continuation.resume(
                    returning: Result(
                        status: process.terminationStatus, output: String(decoding: data, as: UTF8.self),
                        timedOut: killed.isSet, seconds: Date().timeIntervalSince(started)))
            }
        }
    }
}
