import Foundation

/// Runs commands as real child processes, with a deadline after which the process is killed.
struct LiveProcessRunner: LineStreamingRunner {
    init() {}

    func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        try await runStreaming(command, timeout: timeout, onLine: nil)
    }

    func runStreaming(
        _ command: ProcessCommand, timeout: Duration, onLine: (@Sendable (String) -> Void)?
    ) async throws -> ProcessOutput {
        // A script written a moment ago can still be open for writing in a child another thread
        // forked meanwhile (it inherited the descriptor): exec then fails with ETXTBSY, "text file
        // busy", until that child execs or exits. A few short retries, then the error as it is.
        var attempt = 0
        while true {
            do {
                return try await runStreamingOnce(command, timeout: timeout, onLine: onLine)
            } catch let busy as TextFileBusy {
                attempt += 1
                if attempt >= 6 { throw ProcessError.launchFailed(command: command, reason: busy.reason) }
                try await Task.sleep(for: .milliseconds(25 * attempt))
            }
        }
    }

    private struct TextFileBusy: Error {
        var reason: String
    }

    /// The POSIX error under Foundation's launch error (it reports a failed spawn as a Cocoa file
    /// error with the errno underneath).
    static func posixCode(of error: any Error) -> Int32? {
        var current: NSError? = error as NSError
        while let error = current {
            if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
            current = error.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        return nil
    }

    /// A `Process` for `command` at `executable`: its arguments, this process's environment with the
    /// command's over it, its working directory. Both the runner and the sessions start from it.
    static func process(_ command: ProcessCommand, executable: String) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = command.arguments
        var environment = LiveEnvironment().variables
        environment.merge(command.environment) { _, new in new }
        process.environment = environment
        if let directory = command.workingDirectory {
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
        }
        return process
    }

    private func runStreamingOnce(
        _ command: ProcessCommand, timeout: Duration, onLine: (@Sendable (String) -> Void)?
    ) async throws -> ProcessOutput {
        // A relative path with a slash (`scripts/build.sh`) names a file of the working directory.
        var name = command.executable
        if name.contains("/"), !name.hasPrefix("/"), let directory = command.workingDirectory {
            name = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        }
        guard let executable = Self.resolve(name) else {
            throw ProcessError.notFound(command: command)
        }
        let process = Self.process(command, executable: executable)
        let stdoutPipe = Pipe()
        let stderrPipe = Pipe()
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        let stdinPipe = command.standardInput.map { _ in Pipe() }
        process.standardInput = stdinPipe ?? FileHandle.nullDevice

        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { process in
            exited.continuation.yield(process.terminationStatus)
            exited.continuation.finish()
        }
        do {
            try process.run()
        } catch {
            let code = Self.posixCode(of: error)
            let reason =
                error.localizedDescription + (code.map { " (\(String(cString: strerror($0))))" } ?? "")
            if code == ETXTBSY { throw TextFileBusy(reason: reason) }
            throw ProcessError.launchFailed(command: command, reason: reason)
        }
        if let stdinPipe, let input = command.standardInput {
            // On a thread of its own: a child that never reads must not block us past the deadline.
            // A child that exits without reading gives EPIPE, not a SIGPIPE that would end hadeploy.
            signal(SIGPIPE, SIG_IGN)
            let writer = Thread {
                let handle = stdinPipe.fileHandleForWriting
                try? handle.write(contentsOf: input)
                try? handle.close()
            }
            writer.name = "hadeploy.stdin-writer"
            writer.start()
        }
        // Each pipe is drained by a thread of its own with blocking reads. FileHandle's
        // readabilityHandler was used before: cancelling its dispatch source races the descriptor's
        // close, and libdispatch's event loop crashed (SIGSEGV in _dispatch_event_loop_drain) about
        // once in a few hundred runs of a test target.
        let stdoutReader = PipeReader(stdoutPipe.fileHandleForReading, onLine: onLine)
        let stderrReader = PipeReader(stderrPipe.fileHandleForReading)

        let status: Int32? = await withTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await status in exited.stream { return status }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            // Foundation hands the exit over on a dispatch queue of its own, which a busy process
            // (the test suites, dozens of tests at once on two cores) once left unserved for over a
            // minute after `git init` had ended. So the child is also looked at here, without reaping
            // it; a second after it ended, its status is taken from there.
            let pid = process.processIdentifier
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(500))
                    if let status = ChildStatus.endedWithoutReaping(pid) {
                        try? await Task.sleep(for: .seconds(1))
                        return Task.isCancelled ? nil : status
                    }
                }
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
            throw ProcessError.timedOut(command: command, after: timeout)
        }
        // The output is complete once both pipes reach end-of-file. A daemon the command started may
        // hold them open for ever: then what arrived within a moment after the exit is the output.
        let out = await stdoutReader.finish(grace: .seconds(2))
        let err = await stderrReader.finish(grace: .seconds(2))
        return ProcessOutput(status: status, standardOutput: out, standardError: err)
    }

    func locate(_ executable: String) -> String? { Self.resolve(executable) }

    /// Finds an executable by absolute path or on PATH.
    static func resolve(_ name: String) -> String? {
        if name.contains("/") {
            return LiveFileSystem().isExecutableFile(atPath: name) ? name : nil
        }
        let path = LiveEnvironment().variables["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if LiveFileSystem().isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// Reads one pipe to its end on a dedicated thread (never the concurrency pool), keeping the file
/// handle — and so the descriptor — alive until it is done.
private final class PipeReader: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var done = false

    init(_ handle: FileHandle, onLine: (@Sendable (String) -> Void)? = nil) {
        let thread = Thread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                lock.withLock { data.append(chunk) }
                guard let onLine else { continue }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    onLine(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[pending.index(after: newline)...])
                }
            }
            if let onLine, !pending.isEmpty { onLine(String(decoding: pending, as: UTF8.self)) }
            lock.withLock { done = true }
        }
        thread.name = "hadeploy.pipe-reader"
        thread.start()
    }

    /// Everything read once the pipe ended, or what has arrived when `grace` has passed.
    func finish(grace: Duration) async -> Data {
        let deadline = ContinuousClock.now + grace
        while !lock.withLock({ done }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return lock.withLock { data }
    }
}
