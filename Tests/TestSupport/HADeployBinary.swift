import Foundation
import HADeployCore

/// The built `hadeploy` executable, run as a user would: a fresh process, a controlled environment
/// (like `env -i`), a working directory.
public enum HADeployBinary {
    public static var repositoryRoot: URL { TestSupport.repositoryRoot }

    /// The archive under test: `make test` builds the release archive once (as `make dist` does) and
    /// names it in `HADEPLOY_DIST_ARCHIVE`; every suite that runs the binary then runs the one users
    /// install (static Swift runtime and Foundation), extracted from that archive.
    public static var distArchive: String? {
        let value = ProcessInfo.processInfo.environment["HADEPLOY_DIST_ARCHIVE"] ?? ""
        return value.isEmpty ? nil : value
    }

    /// Where the archive's `bin/hadeploy` was extracted to (removed when the test process exits).
    private static func extract(_ archive: String) async throws -> String {
        // A name no other user can guess and prepare, made here (never an existing folder): the binary every
        // suite runs comes from here.
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("hadeploy-under-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        AtExit.register(folder)
        _ = try await TestHost.runner.checked(
            // As its extracting user's files (as `sudo cp -r bin share /usr/local/` installs them), not
            // the archive's recorded owner: hadeploy refuses a twin script another user owns.
            ProcessCommand("tar", ["--no-same-owner", "-C", folder.path, "-xzf", archive]),
            timeout: .seconds(120))
        let entries = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        guard let top = entries.first(where: { $0.hasPrefix("hadeploy-") }) else {
            throw ArchiveProblem(description: "\(archive) holds no hadeploy-<version>-<os>-<arch> folder")
        }
        let binary = folder.appendingPathComponent(top).appendingPathComponent("bin/hadeploy").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ArchiveProblem(description: "\(archive) holds no executable bin/hadeploy")
        }
        return binary
    }

    public struct ArchiveProblem: Error, CustomStringConvertible {
        public let description: String
    }

    /// `swift test` builds every product before it runs tests, and puts the test bundle next to them.
    private static let located = Task<String, any Error> {
        if let archive = distArchive { return try await extract(archive) }
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
        let runner = TestHost.runner
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

    /// Runs the binary with only the base environment, `environment` and `secrets`. A secret reaches
    /// its environment from a file only this user reads, through a shell that exports it: it is on no
    /// command line (other tests watch the process list for the shared Home Assistant's token).
    public static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:],
        secrets: [String: String] = [:], timeout: Duration = .seconds(120)
    ) async throws -> Result {
        var variables = baseEnvironment(home: directory)
        variables.merge(environment) { _, new in new }
        let assignments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var files: [URL] = []
        defer { for file in files { try? FileManager.default.removeItem(at: file) } }
        var exporter: [String] = []
        if !secrets.isEmpty {
            var script = ""
            for (index, (name, value)) in secrets.sorted(by: { $0.key < $1.key }).enumerated() {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "hadeploy-secret-\(UUID().uuidString)")
                guard
                    FileManager.default.createFile(
                        atPath: file.path, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600])
                else { throw CocoaError(.fileWriteUnknown) }
                files.append(file)
                script += "\(name)=$(cat \"$\(index + 1)\"); export \(name); "
            }
            script += "shift \(files.count); exec \"$@\""
            exporter = ["/bin/sh", "-c", script, "sh"] + files.map(\.path)
        }
        let output = try await TestHost.runner.run(
            ProcessCommand(
                "/usr/bin/env", ["-i"] + assignments + exporter + [try await path] + arguments,
                workingDirectory: directory.path),
            timeout: timeout)
        return Result(status: output.status, stdout: output.stdout, stderr: output.stderr)
    }
}
