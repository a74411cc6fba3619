import Foundation
import HADeployCore

/// Derives `GitVersion` by asking the real `git`, the way `git describe --tags --match 'v*'` sees it.
public struct GitVersionResolver: Sendable {
    public var runner: any ProcessRunner
    public var repository: URL
    public var git: String
    public var timeout: Duration

    public init(
        runner: any ProcessRunner, repository: URL, git: String = "git", timeout: Duration = .seconds(20)
    ) {
        self.runner = runner
        self.repository = repository
        self.git = git
        self.timeout = timeout
    }

    /// The result plus warnings for the user (no tag found, ignored tags...).
    public struct Resolution: Sendable {
        public var version: GitVersion
        public var warnings: [String]
    }

    /// Two git processes, at once: `git log` of HEAD (the commit count, every `v*` tag with its
    /// commit and the parents to measure distances, and `grafted` when the clone is shallow) and
    /// `git status` (uncommitted changes; also whether this is a repository with a commit). No one git
    /// command answers both: the log cannot see the work tree and `describe --dirty` cannot count.
    public func resolve(allowShallow: Bool = false) async throws -> Resolution {
        async let statusRun = run(
            ["status", "--porcelain=v2", "--branch", "--untracked-files=no"], allowFailure: true)
        async let logRun = run(
            ["log", "--format=%H%x09%P%x09%D", "--decorate-refs=refs/tags/v*", "HEAD", "--"],
            allowFailure: true)
        let (status, log) = try await (statusRun, logRun)
        guard status.status == 0 else { throw VersioningError.notARepository(path: repository.path) }
        let statusLines = status.stdout.split(separator: "\n")
        if statusLines.contains("# branch.oid (initial)") {
            throw VersioningError.noCommits(path: repository.path)
        }
        guard log.status == 0 else {
            throw VersioningError.git(
                "`git log HEAD`: \(log.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        let dirty = statusLines.contains { !$0.hasPrefix("#") }
        let history = History(log: log.stdout)
        let count = history.commits.count
        let shallow = history.grafted
        if shallow && !allowShallow { throw VersioningError.shallowClone(commitCount: count) }

        var warnings: [String] = []
        if shallow {
            warnings.append(
                "shallow clone: build number \(count) counts only the fetched commits "
                    + "(`git fetch --unshallow` for the real one)")
        }
        guard let (tag, distance) = history.nearestReleaseTag(warnings: &warnings) else {
            warnings.append(
                "no release tag (v1.2.3) is reachable from HEAD; using 0.0.0. Tag a release with "
                    + "`git tag v1.0.0`.")
            let version = GitVersion(
                marketingVersion: "0.0.0", buildNumber: count, tag: nil, commitsSinceTag: count,
                dirty: dirty, shallow: shallow)
            return Resolution(version: version, warnings: warnings)
        }
        let version = GitVersion(
            marketingVersion: tag.marketingVersion, buildNumber: count, tag: tag.name,
            commitsSinceTag: distance, dirty: dirty, shallow: shallow)
        return Resolution(version: version, warnings: warnings)
    }

    /// HEAD's history as `git log --format=%H%x09%P%x09%D --decorate-refs=refs/tags/v*` prints it.
    struct History {
        struct Commit {
            var parents: [Int]
            var tags: [String]
        }
        var commits: [Commit] = []
        /// A commit's parents were cut off (a shallow clone's boundary).
        var grafted = false

        init(log: String) {
            var index: [Substring: Int] = [:]
            var parents: [[Substring]] = []
            for line in log.split(separator: "\n") {
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                guard fields.count >= 3 else { continue }
                index[fields[0]] = commits.count
                parents.append(fields[1].split(separator: " "))
                var tags: [String] = []
                for decoration in fields[2].split(separator: ",") {
                    let name = decoration.trimmingCharacters(in: .whitespaces)
                    if name.hasPrefix("tag: ") {
                        tags.append(String(name.dropFirst(5)))
                    } else if name == "grafted" {
                        grafted = true
                    }
                }
                commits.append(Commit(parents: [], tags: tags))
            }
            for position in commits.indices {
                commits[position].parents = parents[position].compactMap { index[$0] }
            }
        }

        /// The commits reachable from `start`, itself included.
        func ancestors(of start: Int) -> Int {
            var seen = Set([start])
            var stack = [start]
            while let next = stack.popLast() {
                for parent in commits[next].parents where seen.insert(parent).inserted {
                    stack.append(parent)
                }
            }
            return seen.count
        }

        /// What `git describe --tags --match 'v*'` finds, keeping only release tags: the tagged commit
        /// with the fewest commits since (HEAD's commits not reachable from it; the nearer in log order
        /// on a tie), its highest release tag, and that distance. Other `v*` names nearer than it are
        /// named in a warning.
        func nearestReleaseTag(warnings: inout [String]) -> (ReleaseTag, Int)? {
            let tagged = commits.indices.filter { !commits[$0].tags.isEmpty }
                .map { (position: $0, distance: commits.count - ancestors(of: $0)) }
                .sorted { ($0.distance, $0.position) < ($1.distance, $1.position) }
            for candidate in tagged {
                let names = commits[candidate.position].tags.sorted()
                if let best = names.compactMap(ReleaseTag.init).max() { return (best, candidate.distance) }
                for name in names {
                    warnings.append("ignoring tag \(name): not `v` followed by a version like v1.2.3")
                }
            }
            return nil
        }
    }

    private struct GitOutput {
        var status: Int32
        var stdout: String
        var stderr: String
        var trimmed: String { stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    private func run(_ arguments: [String], allowFailure: Bool = false) async throws -> GitOutput {
        let command = ProcessCommand(
            git, ["-C", repository.path] + arguments,
            environment: ["LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"])
        let output: ProcessOutput
        do {
            output = try await runner.run(command, timeout: timeout)
        } catch ProcessError.notFound {
            throw VersioningError.git("git is not installed or not on PATH")
        }
        if output.status != 0 && !allowFailure {
            throw VersioningError.git(
                "`git \(arguments.joined(separator: " "))`: "
                    + output.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return GitOutput(status: output.status, stdout: output.stdout, stderr: output.stderr)
    }
}
