import Foundation

/// Runs a real libimobiledevice tool as a subprocess with a deadline (killed when it passes).
struct ToolResult: CustomStringConvertible {
    let status: Int32
    let stdout: String
    let stderr: String
    let timedOut: Bool
    let seconds: Double

    var output: String { stdout + stderr }
    var description: String {
        "exit \(status)\(timedOut ? " (killed on timeout)" : "") after \(String(format: "%.1f", seconds)) s\n"
            + "stdout: \(stdout)\nstderr: \(stderr)"
    }
}

enum ToolRunner {
    private static func drain(_ pipe: Pipe) async -> Data {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: pipe.fileHandleForReading.readDataToEndOfFile())
            }
        }
    }

    /// Where Debian puts the tools; a missing tool fails the test (scripts/idevice-tools.sh installs them).
    static func path(of tool: String) -> String { "/usr/bin/\(tool)" }

    static func run(
        _ tool: String, _ arguments: [String], socket: String, timeout: Double = 20,
        interruptAfter: Double? = nil, interruptWhen: (@Sendable () async -> Bool)? = nil
    ) async throws -> ToolResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path(of: tool))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["USBMUXD_SOCKET_ADDRESS"] = socket
        process.environment = environment
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        // Drain the pipes on GCD threads: a blocking read on the Swift cooperative pool (2 threads on
        // this machine) would starve the emulator running in this very process.
        async let outData = drain(outPipe)
        async let errData = drain(errPipe)
        var timedOut = false
        var interrupted = false
        while process.isRunning {
            let elapsed = Date().timeIntervalSince(started)
            if elapsed > timeout {
                timedOut = true
                process.terminate()
                try? await Task.sleep(for: .milliseconds(300))
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                break
            }
            if !interrupted {
                var shouldInterrupt = false
                if let interruptAfter, elapsed > interruptAfter { shouldInterrupt = true }
                if let interruptWhen, await interruptWhen() { shouldInterrupt = true }
                if shouldInterrupt {
                    interrupted = true
                    kill(process.processIdentifier, SIGINT)
                }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        let stdout = String(decoding: await outData, as: UTF8.self)
        let stderr = String(decoding: await errData, as: UTF8.self)
        return ToolResult(
            status: process.terminationStatus, stdout: stdout, stderr: stderr, timedOut: timedOut,
            seconds: Date().timeIntervalSince(started))
    }
}
