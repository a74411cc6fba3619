import Foundation

extension LiveProcessRunner: SessionStartingRunner {
    func startSession(_ command: ProcessCommand) throws -> any ProcessSession {
        guard let executable = Self.resolve(command.executable) else {
            throw ProcessError.notFound(command: command)
        }
        let child: ChildProcess
        do {
            child = try Self.spawn(command, executable: executable, standardInput: .pipe)
        } catch {
            throw ProcessError.launchFailed(command: command, reason: error.description)
        }
        // A child that exits without reading gives EPIPE on write, not a SIGPIPE that would end hadeploy.
        signal(SIGPIPE, SIG_IGN)
        let session = LiveProcessSession(child: child)
        if let first = command.standardInput { try session.send(first) }
        return session
    }
}

/// A running child with its three pipes, each read by a thread of its own (as `LiveProcessRunner`
/// reads them: never the concurrency pool, never a dispatch source).
final class LiveProcessSession: ProcessSession, @unchecked Sendable {
    private let child: ChildProcess
    private let input: FileHandle
    private let lines = LineMailbox()
    private let lock = NSLock()
    private var errorTail = Data()
    private var inputClosed = false

    static let errorTailLimit = 16_384

    /// `child` was started with its three streams piped.
    init(child: ChildProcess) {
        self.child = child
        self.input = child.standardInput!
        let output = child.standardOutput!
        let errors = child.standardError!
        let lines = self.lines
        let reader = Thread {
            var pending = Data()
            while true {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    lines.push(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[pending.index(after: newline)...])
                }
            }
            if !pending.isEmpty { lines.push(String(decoding: pending, as: UTF8.self)) }
            lines.end()
        }
        reader.name = "hadeploy.session-stdout"
        reader.start()
        let errorReader = Thread { [weak self] in
            while true {
                let chunk = errors.availableData
                if chunk.isEmpty { break }
                guard let self else { continue }
                self.lock.withLock {
                    self.errorTail.append(chunk)
                    if self.errorTail.count > Self.errorTailLimit {
                        self.errorTail = Data(self.errorTail.suffix(Self.errorTailLimit))
                    }
                }
            }
        }
        errorReader.name = "hadeploy.session-stderr"
        errorReader.start()
    }

    deinit {
        closeInput()
        child.signal(SIGKILL)
    }

    var processIdentifier: Int32 { child.processIdentifier }

    var isRunning: Bool { child.isRunning }

    func send(_ data: Data) throws {
        try lock.withLock {
            guard !inputClosed else { throw ProcessSessionClosed() }
            try input.write(contentsOf: data)
        }
    }

    func nextLine(timeout: Duration) async throws -> String? {
        try await lines.next(timeout: timeout)
    }

    func standardErrorTail() -> String {
        lock.withLock { String(decoding: errorTail, as: UTF8.self) }
    }

    private func closeInput() {
        lock.withLock {
            guard !inputClosed else { return }
            inputClosed = true
            try? input.close()
        }
    }

    func stop(grace: Duration) async {
        closeInput()
        if await child.ended(within: grace) { return }
        await child.terminate()
    }
}

/// The session's stdin is closed: it was stopped.
struct ProcessSessionClosed: Error, CustomStringConvertible {
    var description: String { "the process's input is closed" }
}

/// Lines from a child's stdout, for one reader at a time, each wait bounded.
private final class LineMailbox: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false
    private var waiter: (token: UInt64, continuation: CheckedContinuation<String?, any Error>)?
    private var tokens: UInt64 = 0

    func push(_ line: String) {
        let resumed: CheckedContinuation<String?, any Error>? = lock.withLock {
            guard let waiter else {
                lines.append(line)
                return nil
            }
            self.waiter = nil
            return waiter.continuation
        }
        resumed?.resume(returning: line)
    }

    func end() {
        let resumed: CheckedContinuation<String?, any Error>? = lock.withLock {
            ended = true
            defer { waiter = nil }
            return waiter?.continuation
        }
        resumed?.resume(returning: nil)
    }

    /// Takes the waiter registered under `token`, if it is still the one waiting.
    private func take(_ token: UInt64) -> CheckedContinuation<String?, any Error>? {
        lock.withLock {
            guard let waiter, waiter.token == token else { return nil }
            self.waiter = nil
            return waiter.continuation
        }
    }

    func next(timeout: Duration) async throws -> String? {
        let token: UInt64 = lock.withLock {
            tokens += 1
            return tokens
        }
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.take(token)?.resume(throwing: ProcessSessionTimeout(after: timeout))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<String?, any Error>) in
                let immediate: Result<String?, any Error>? = lock.withLock {
                    if !lines.isEmpty { return .success(lines.removeFirst()) }
                    if ended { return .success(nil) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    waiter = (token, continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            self.take(token)?.resume(throwing: CancellationError())
        }
    }
}
