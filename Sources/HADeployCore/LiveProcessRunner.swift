import Foundation

/// Runs commands as real child processes, with a deadline after which the process is killed.
public struct LiveProcessRunner: ProcessRunner {
    public init() {}

    public func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        guard let executable = Self.resolve(command.executable) else {
            throw ProcessError.notFound(command: command)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = command.arguments
        var environment = ProcessInfo.processInfo.environment
        environment.merge(command.environment) { _, new in new }
        process.environment = environment
        if let directory = command.workingDirectory {
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
        }
        let stdoutPipe = Pipe()
        let stderrPipe = Pipe()
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        process.standardInput = FileHandle.nullDevice

        let collector = OutputCollector()
        stdoutPipe.fileHandleForReading.readabilityHandler = { handle in
            collector.append(handle.availableData, toError: false)
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { handle in
            collector.append(handle.availableData, toError: true)
        }

        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { process in
            exited.continuation.yield(process.terminationStatus)
            exited.continuation.finish()
        }
        do {
            try process.run()
        } catch {
            throw ProcessError.launchFailed(command: command, reason: "\(error.localizedDescription)")
        }

        let status: Int32? = await withTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await status in exited.stream { return status }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let status else {
            process.terminate()
            let pid = process.processIdentifier
            // SIGTERM first; a process that ignores it gets SIGKILL a moment later.
            try? await Task.sleep(for: .milliseconds(500))
            if process.isRunning { kill(pid, SIGKILL) }
            stdoutPipe.fileHandleForReading.readabilityHandler = nil
            stderrPipe.fileHandleForReading.readabilityHandler = nil
            throw ProcessError.timedOut(command: command, after: timeout)
        }
        stdoutPipe.fileHandleForReading.readabilityHandler = nil
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        collector.append(stdoutPipe.fileHandleForReading.readDataToEndOfFile(), toError: false)
        collector.append(stderrPipe.fileHandleForReading.readDataToEndOfFile(), toError: true)
        let (out, err) = collector.data
        return ProcessOutput(status: status, standardOutput: out, standardError: err)
    }

    /// Finds an executable by absolute path or on PATH.
    public static func resolve(_ name: String) -> String? {
        if name.contains("/") {
            return FileManager.default.isExecutableFile(atPath: name) ? name : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

private final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    func append(_ data: Data, toError: Bool) {
        guard !data.isEmpty else { return }
        lock.withLock {
            if toError { err.append(data) } else { out.append(data) }
        }
    }

    var data: (Data, Data) { lock.withLock { (out, err) } }
}
