import Foundation

/// Where a command's output goes: results on stdout, human messages on stderr.
///
/// `write` is for text, which may quote the outside world: the sinks neutralise it
/// (``PrintableText``). `writeControl` is for hadeploy's own terminal control sequences and GitHub
/// workflow commands, written as they are.
public protocol OutputSink: Sendable {
    func write(_ text: String, to stream: OutputChannel)
    func writeControl(_ sequence: String, to stream: OutputChannel)
}

public enum OutputChannel: Sendable {
    case standardOutput, standardError
}

/// Writes to the real stdout/stderr, with URL credentials redacted and control characters and
/// workflow commands neutralised (the last stop before a terminal or a CI log, whatever produced the
/// text).
public struct StandardOutputSink: OutputSink {
    public init() {}

    public func write(_ text: String, to stream: OutputChannel) {
        writeControl(PrintableText.neutralised(URLCredentials.redact(text)), to: stream)
    }

    public func writeControl(_ sequence: String, to stream: OutputChannel) {
        let handle = stream == .standardOutput ? FileHandle.standardOutput : FileHandle.standardError
        handle.write(Data(URLCredentials.redact(sequence).utf8))
    }
}

/// Collects output in memory (tests).
public final class RecordingOutputSink: OutputSink, @unchecked Sendable {
    private let lock = NSLock()
    private var out = ""
    private var err = ""

    public init() {}

    public func write(_ text: String, to stream: OutputChannel) {
        writeControl(PrintableText.neutralised(URLCredentials.redact(text)), to: stream)
    }

    public func writeControl(_ sequence: String, to stream: OutputChannel) {
        let text = URLCredentials.redact(sequence)
        lock.withLock {
            if stream == .standardOutput { out += text } else { err += text }
        }
    }

    public var standardOutput: String { lock.withLock { out } }
    public var standardError: String { lock.withLock { err } }
}

/// Where interactive answers come from (`trust-host`'s confirmation).
public protocol InputSource: Sendable {
    /// Whether a person can answer (stdin is a terminal).
    var isInteractive: Bool { get }
    func readLine() -> String?
}

/// The real stdin.
public struct StandardInput: InputSource {
    public init() {}
    public var isInteractive: Bool { isatty(STDIN_FILENO) == 1 }
    public func readLine() -> String? { Swift.readLine() }
}

/// Answers nothing and is not interactive: the default for contexts built in tests, so a command
/// that would prompt fails the way it does in CI instead of blocking.
public struct NoInput: InputSource {
    public init() {}
    public var isInteractive: Bool { false }
    public func readLine() -> String? { nil }
}

/// Everything with a side effect, injected: environment, processes, output, input, working
/// directory, files, clock.
///
/// Only the CLI builds the live context; the Kit and below take it (or the piece they need) as a
/// parameter and never reach `FileManager`, the clock or the process environment themselves.
public struct HADeployContext: Sendable {
    /// The environment variables (the live context starts from the process's own).
    public var environment: [String: String]
    public var runner: any ProcessRunner
    public var output: any OutputSink
    public var currentDirectory: URL
    public var fileSystem: any FileSystem
    public var clock: any WallClock
    /// Process id, host and user name.
    public var system: any SystemEnvironment
    public var input: any InputSource

    public init(
        environment: [String: String], runner: any ProcessRunner, output: any OutputSink,
        currentDirectory: URL, fileSystem: any FileSystem, clock: any WallClock,
        system: any SystemEnvironment, input: any InputSource = NoInput()
    ) {
        self.environment = environment
        self.runner = runner
        self.output = output
        self.currentDirectory = currentDirectory
        self.fileSystem = fileSystem
        self.clock = clock
        self.system = system
        self.input = input
    }

    /// The context of the running program: the only door to the machine's files, processes, clock
    /// and environment (their live implementations are internal to HADeployCore).
    public static func live() -> HADeployContext {
        let fileSystem = LiveFileSystem()
        let system = LiveEnvironment()
        return HADeployContext(
            environment: system.variables,
            runner: LiveProcessRunner(),
            output: StandardOutputSink(),
            currentDirectory: fileSystem.currentDirectory,
            fileSystem: fileSystem,
            clock: LiveClock(),
            system: system,
            input: StandardInput())
    }

    /// The clock's time, as a function to hand on.
    public var now: @Sendable () -> Date {
        let clock = self.clock
        return { clock.now() }
    }

    public func print(_ text: String) { output.write(text + "\n", to: .standardOutput) }
    public func message(_ text: String) { output.write(text + "\n", to: .standardError) }

    /// Resolves a user-given path against the working directory (`~/` against HOME).
    public func url(for path: String) -> URL {
        let expanded = HomePath.expand(path, environment)
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded) }
        return currentDirectory.appendingPathComponent(expanded)
    }
}
