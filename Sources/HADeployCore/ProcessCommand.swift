import Foundation

/// An external command as a value: what to run, with which arguments and environment.
///
/// Commands are built by typed builders and asserted in tests without running anything; one
/// runner executes them. `secretValues` lists argument or environment values that must be shown as `***`.
public struct ProcessCommand: Sendable, Hashable, Codable, CustomStringConvertible {
    public var executable: String
    public var arguments: [String]
    /// Variables added to (or overriding) the inherited environment.
    public var environment: [String: String]
    public var workingDirectory: String?
    public var secretValues: Set<String>
    /// Bytes written to the process's stdin, then closed (nil: /dev/null). The way to hand a secret
    /// to a child: unlike arguments and the environment it is not readable in `/proc/PID/cmdline`.
    /// Never shown, encoded or logged.
    public var standardInput: Data?

    public init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:],
        workingDirectory: String? = nil, secretValues: Set<String> = [], standardInput: Data? = nil
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.secretValues = secretValues
        self.standardInput = standardInput
    }

    /// The argument vector with secrets replaced by `***`.
    public var redactedArguments: [String] {
        arguments.map { redact($0) }
    }

    /// The environment additions with secret values replaced by `***`.
    public var redactedEnvironment: [String: String] {
        environment.mapValues { redact($0) }
    }

    public func redact(_ value: String) -> String {
        Secret.scrub(value, of: secretValues)
    }

    /// A shell-like rendering for logs and plans, secrets redacted.
    public var description: String {
        ([executable] + redactedArguments).map(Self.quote).joined(separator: " ")
    }

    /// The command as one POSIX shell line, for running it on another machine (`ssh host LINE`):
    /// `cd DIR && env K=V … EXECUTABLE ARGS…`, every word quoted. Not redacted: it is executed, never
    /// shown — show `description` instead.
    public var shellLine: String {
        var words: [String] = []
        if !environment.isEmpty {
            words.append("env")
            words += environment.sorted { $0.key < $1.key }.map { Self.quote("\($0.key)=\($0.value)") }
        }
        words += ([executable] + arguments).map(Self.quote)
        let line = words.joined(separator: " ")
        guard let workingDirectory else { return line }
        return "cd \(Self.quote(workingDirectory)) && \(line)"
    }

    /// POSIX shell quoting: the word unchanged when it is plain, else `'…'` with `'\''` for quotes.
    public static func quote(_ word: String) -> String {
        let safe = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_./:=,@%+"))
        if !word.isEmpty, word.unicodeScalars.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    enum CodingKeys: String, CodingKey {
        case executable, arguments, environment, workingDirectory
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(executable, forKey: .executable)
        try container.encode(redactedArguments, forKey: .arguments)
        try container.encode(redactedEnvironment, forKey: .environment)
        try container.encodeIfPresent(workingDirectory, forKey: .workingDirectory)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        executable = try container.decode(String.self, forKey: .executable)
        arguments = try container.decode([String].self, forKey: .arguments)
        environment = try container.decode([String: String].self, forKey: .environment)
        workingDirectory = try container.decodeIfPresent(String.self, forKey: .workingDirectory)
        secretValues = []
        standardInput = nil
    }
}
