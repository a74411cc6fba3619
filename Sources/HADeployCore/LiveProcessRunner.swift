import Foundation

/// Runs commands as real child processes, with a deadline after which the process is killed.
struct LiveProcessRunner: ProcessRunner {
    init() {}

    func run(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        // A script written a moment ago can still be open for writing in a child another thread
        // forked meanwhile (it inherited the descriptor): exec then fails with ETXTBSY, "text file
        // busy", until that child execs or exits. A few short retries, then the error as it is.
        var attempt = 0
        while true {
            do {
                return try await runOnce(command, timeout: timeout)
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

    /// A child for `command` at `executable`: its arguments, this process's environment with the
    /// command's over it, its working directory, stdout and stderr piped. Both the runner and the
    /// sessions start from it.
    static func spawn(_ command: ProcessCommand, executable: String, standardInput: ChildProcess.Stream)
        throws(ChildProcess.SpawnFailure) -> ChildProcess
    {
        var environment = LiveEnvironment().variables
        environment.merge(command.environment) { _, new in new }
        return try ChildProcess(
            executable: executable, arguments: command.arguments, environment: environment,
            directory: command.workingDirectory, standardInput: standardInput)
    }

    private func runOnce(_ command: ProcessCommand, timeout: Duration) async throws -> ProcessOutput {
        // A relative path with a slash (`scripts/build.sh`) names a file of the working directory.
        var name = command.executable
        if name.contains("/"), !name.hasPrefix("/"), let directory = command.workingDirectory {
            name = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        }
        guard let executable = Self.resolve(name) else {
            throw ProcessError.notFound(command: command)
        }
        let child: ChildProcess
        do {
            child = try Self.spawn(
                command, executable: executable,
                standardInput: command.standardInput == nil ? .nullDevice : .pipe)
        } catch {
            if error.code == ETXTBSY { throw TextFileBusy(reason: error.description) }
            throw ProcessError.launchFailed(command: command, reason: error.description)
        }
        if let stdin = child.standardInput, let input = command.standardInput {
            // On a thread of its own: a child that never reads must not block us past the deadline.
            // A child that exits without reading gives EPIPE, not a SIGPIPE that would end hadeploy.
            signal(SIGPIPE, SIG_IGN)
            let writer = Thread {
                try? stdin.write(contentsOf: input)
                try? stdin.close()
            }
            writer.name = "hadeploy.stdin-writer"
            writer.start()
        }
        // Each pipe is drained by a thread of its own with blocking reads. FileHandle's
        // readabilityHandler was used before: cancelling its dispatch source races the descriptor's
        // close, and libdispatch's event loop crashed (SIGSEGV in _dispatch_event_loop_drain) about
        // once in a few hundred runs of a test target.
        let stdoutReader = PipeReader(child.standardOutput!)
        let stderrReader = PipeReader(child.standardError!)

        let status: Int32? = await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await child.exited() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let status else {
            // SIGTERM first; a process that ignores it gets SIGKILL a moment later.
            await child.terminate()
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

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                lock.withLock { data.append(chunk) }
            }
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
