import Foundation
import HADeployCore

/// The built `hadeploy` executable, run as a user would: a fresh process, a controlled environment
/// (like `env -i`), a working directory.
public enum HADeployBinary {
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `swift test` builds every product before it runs tests, and puts the test bundle next to them.
    private static let located = Task<String, any Error> {
        var candidates = [Bundle.main.bundleURL]
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent())
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let path = directory.appendingPathComponent("hadeploy").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        // Not found (an unusual runner): build it.
        let runner = LiveProcessRunner()
        let root = repositoryRoot.path
        _ = try await runner.checked(
            ProcessCommand("swift", ["build", "--product", "hadeploy"], workingDirectory: root),
            timeout: .seconds(1800))
        let binPath = try await runner.checked(
            ProcessCommand("swift", ["build", "--show-bin-path"], workingDirectory: root),
            timeout: .seconds(120))
        return binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/hadeploy"
    }

    public static var path: String { get async throws { try await located.value } }

    /// What every run gets: git without the user's config, a private HOME.
    public static func baseEnvironment(home: URL) -> [String: String] {
        [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
            "HOME": home.path, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C.UTF-8",
        ]
    }

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    public static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:],
        timeout: Duration = .seconds(120)
    ) async throws -> Result {
        var variables = baseEnvironment(home: directory)
        variables.merge(environment) { _, new in new }
        let assignments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let output = try await LiveProcessRunner().run(
            ProcessCommand(
                "/usr/bin/env", ["-i"] + assignments + [try await path] + arguments,
                workingDirectory: directory.path),
            timeout: timeout)
        return Result(status: output.status, stdout: output.stdout, stderr: output.stderr)
    }
}
