import Foundation
import HADeployCore

/// A real git repository in a temporary directory, built with the real `git` (no global or system
/// config, fixed author and dates) so tests can compare hadeploy's answers with git's own.
public final class GitRepository: Sendable {
    public let url: URL
    private let runner = TestHost.runner
    private let counter = Counter()

    public static let environment: [String: String] = [
        "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_AUTHOR_DATE": "1700000000 +0000",
        "GIT_COMMITTER_DATE": "1700000000 +0000", "LC_ALL": "C",
    ]

    /// `git init` in `url` (a fresh temporary directory when nil), removed with the repository
    /// unless `keep`.
    public init(at url: URL? = nil, keep: Bool = false) async throws {
        self.url =
            url
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "hadeploy-git-\(UUID().uuidString)")
        removesOnDeinit = !keep
        try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
        try await git("init", "-q", "-b", "main")
    }

    /// Makes `directory` a checkout: `git init`, commit every file not ignored, and tag that commit
    /// (when `tag` is given). The directory stays when the test is done with the repository.
    public static func commitAll(at directory: URL, message: String = "app", tag: String? = nil) async throws
    {
        let repository = try await GitRepository(at: directory, keep: true)
        try await repository.git("add", "-A")
        try await repository.git("commit", "-qm", message)
        if let tag { try await repository.tag(tag) }
    }

    deinit { if removesOnDeinit { try? FileManager.default.removeItem(at: url) } }

    private let removesOnDeinit: Bool

    /// Runs git in the repository and returns its trimmed stdout; throws on a non-zero exit.
    @discardableResult
    public func git(_ arguments: String...) async throws -> String {
        try await git(arguments)
    }

    @discardableResult
    public func git(_ arguments: [String]) async throws -> String {
        let output = try await runner.checked(
            ProcessCommand("git", ["-C", url.path] + arguments, environment: Self.environment),
            timeout: .seconds(60))
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Adds `count` commits on the current branch in one `git fast-import` run (one process however
    /// many commits), each changing `counter.txt`, and checks the result out.
    public func commit(_ count: Int = 1) async throws {
        let branch = try await git("symbolic-ref", "--short", "HEAD")
        let hasHead = (try? await git("rev-parse", "--verify", "--quiet", "HEAD")) != nil
        var stream = ""
        for index in 0..<count {
            let number = counter.next()
            let message = "commit \(number)\n"
            let content = "\(number)\n"
            stream += "commit refs/heads/\(branch)\n"
            stream += "committer Test <test@example.com> \(1_700_000_000 + number) +0000\n"
            stream += "data \(message.utf8.count)\n\(message)"
            if index == 0 && hasHead { stream += "from refs/heads/\(branch)^0\n" }
            stream += "M 644 inline counter.txt\ndata \(content.utf8.count)\n\(content)\n"
        }
        let input = url.appendingPathComponent(".git/fast-import-input")
        try Data(stream.utf8).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        _ = try await runner.checked(
            ProcessCommand(
                "/bin/sh", ["-c", "git fast-import --quiet --force < .git/fast-import-input"],
                environment: Self.environment, workingDirectory: url.path),
            timeout: .seconds(60))
        try await git("reset", "-q", "--hard")
    }

    public func tag(_ name: String, at revision: String = "HEAD", annotated: Bool = false) async throws {
        if annotated {
            try await git("tag", "-a", "-m", "release \(name)", name, revision)
        } else {
            try await git("tag", name, revision)
        }
    }

    /// What `git describe --tags --match 'v*' --long` names: (tag, commits since it).
    public func describe() async throws -> (tag: String, distance: Int)? {
        guard let text = try? await git("describe", "--tags", "--match", "v*", "--long") else { return nil }
        var parts = text.split(separator: "-").map(String.init)
        parts.removeLast()
        let distance = Int(parts.removeLast())!
        return (parts.joined(separator: "-"), distance)
    }

    public func commitCount() async throws -> Int {
        Int(try await git("rev-list", "--count", "HEAD"))!
    }

    /// Every file under the repository (`.git` included) with its size, modification date and a
    /// content digest: two snapshots are equal only if nothing was written.
    public func snapshot() throws -> [String: FileState] {
        var result: [String: FileState] = [:]
        let root = url.resolvingSymlinksInPath().path
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return result }
        for case let path as String in enumerator {
            let full = root + "/" + path
            let attributes = try FileManager.default.attributesOfItem(atPath: full)
            guard attributes[.type] as? FileAttributeType == .typeRegular else { continue }
            let data = FileManager.default.contents(atPath: full) ?? Data()
            let date = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            result[path] = FileState(modified: date, contents: data)
        }
        return result
    }
}

public struct FileState: Equatable, Sendable {
    public var modified: TimeInterval
    public var contents: Data
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}
