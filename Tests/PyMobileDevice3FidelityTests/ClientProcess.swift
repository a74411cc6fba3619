import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A client tool (pymobiledevice3 or a Debian libimobiledevice tool) run against the twins, its
/// output in files so that long-running commands (`syslog live`, `notification observe`) can be
/// read while they run and stopped once they showed what they should.
final class ClientProcess: @unchecked Sendable {
    let command: [String]
    let process: ChildProcess
    private let outURL: URL
    private let errURL: URL
    private let started = Date()

    struct Result: CustomStringConvertible {
        let command: [String]
        let status: Int32
        let stdout: String
        let stderr: String
        let timedOut: Bool
        let seconds: Double

        var succeeded: Bool { status == 0 && !timedOut }
        var output: String { stdout + stderr }
        var description: String {
            "$ \(command.joined(separator: " "))\nexit \(status)\(timedOut ? " (killed at its deadline)" : "")"
                + " after \(String(format: "%.1f", seconds)) s\nstdout: \(stdout.suffix(3000))\n"
                + "stderr: \(stderr.suffix(3000))"
        }
    }

    /// Starts `executable arguments` with `environment` added, output to files in `directory`.
    init(_ executable: String, _ arguments: [String], environment: [String: String], directory: URL) throws {
        command = [URL(fileURLWithPath: executable).lastPathComponent] + arguments
        let stamp = UUID().uuidString.prefix(8)
        outURL = directory.appendingPathComponent("client-\(stamp).out")
        errURL = directory.appendingPathComponent("client-\(stamp).err")
        for url in [outURL, errURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        process = try ChildProcess(
            executable: executable, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: directory.path, standardOutput: .descriptor(out.fileDescriptor),
            standardError: .descriptor(err.fileDescriptor))
    }

    var stdoutSoFar: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
    var stderrSoFar: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// Waits for the exit; kills the process (SIGKILL) when `deadline` seconds pass first.
    func finish(deadline: Double) async -> Result {
        var timedOut = false
        while process.isRunning {
            if Date().timeIntervalSince(started) > deadline {
                timedOut = true
                process.signal(SIGKILL)
                break
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        _ = await process.exited()
        return result(timedOut: timedOut)
    }

    /// For commands that run until stopped: waits until `condition` holds on the output so far (or
    /// `deadline` passes, or the process exits on its own), then kills it. `timedOut` is true only
    /// when the condition never held.
    func stop(when condition: (String) -> Bool, deadline: Double) async -> Result {
        var satisfied = false
        while process.isRunning && Date().timeIntervalSince(started) < deadline {
            if condition(stdoutSoFar) {
                satisfied = true
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        process.signal(SIGKILL)
        _ = await process.exited()
        if !satisfied { satisfied = condition(stdoutSoFar) }
        return result(timedOut: !satisfied)
    }

    /// Waits until `condition` holds on stdout and stderr so far (true), or `deadline` seconds from the
    /// start pass or the process exits (false); the process keeps running.
    func wait(until condition: (String) -> Bool, deadline: Double) async -> Bool {
        while Date().timeIntervalSince(started) < deadline {
            if condition(stdoutSoFar + stderrSoFar) { return true }
            if !process.isRunning { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition(stdoutSoFar + stderrSoFar)
    }

    private func result(timedOut: Bool) -> Result {
        Result(
            command: command, status: process.exitStatus ?? -1, stdout: stdoutSoFar, stderr: stderrSoFar,
            timedOut: timedOut, seconds: Date().timeIntervalSince(started))
    }
}
