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

    public func resolve(allowShallow: Bool = false) async throws -> Resolution {
        let head = try await run(["rev-parse", "--verify", "--quiet", "HEAD"], allowFailure: true)
        if head.status != 0 {
            let inside = try await run(["rev-parse", "--is-inside-work-tree"], allowFailure: true)
            guard inside.status == 0 else { throw VersioningError.notARepository(path: repository.path) }
            throw VersioningError.noCommits(path: repository.path)
        }

        let shallow = try await run(["rev-parse", "--is-shallow-repository"]).trimmed == "true"
        guard let count = Int(try await run(["rev-list", "--count", "HEAD"]).trimmed) else {
            throw VersioningError.git("`git rev-list --count HEAD` did not print a number")
        }
        if shallow && !allowShallow { throw VersioningError.shallowClone(commitCount: count) }
        let dirty = !(try await run(["status", "--porcelain", "--untracked-files=no"]).trimmed.isEmpty)

        var warnings: [String] = []
        if shallow {
            warnings.append(
                "shallow clone: build number \(count) counts only the fetched commits "
                    + "(`git fetch --unshallow` for the real one)")
        }
        guard let (tag, distance) = try await nearestReleaseTag(warnings: &warnings) else {
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

    /// The nearest reachable `v*` tag that is a release tag; among several on that commit, the highest.
    private func nearestReleaseTag(warnings: inout [String]) async throws -> (ReleaseTag, Int)? {
        var excluded: [String] = []
        // Each round either finds a usable tag or excludes at least one unusable name, so this ends;
        // the cap only bounds a repository with thousands of junk `v*` tags.
        for _ in 0..<64 {
            var arguments = ["describe", "--tags", "--long", "--match", "v*"]
            for name in excluded { arguments += ["--exclude", name] }
            arguments.append("HEAD")
            let described = try await run(arguments, allowFailure: true)
            guard described.status == 0 else { return nil }
            // "<tag>-<distance>-g<sha>"; the tag itself may contain dashes.
            let text = described.trimmed
            let parts = text.split(separator: "-")
            guard parts.count >= 3, let distance = Int(parts[parts.count - 2]) else {
                throw VersioningError.git("unexpected `git describe` output: \(text)")
            }
            let describedName = parts.dropLast(2).joined(separator: "-")
            let commit = try await run(["rev-list", "-n", "1", describedName]).trimmed
            let onCommit = try await run(["tag", "--points-at", commit, "--list", "v*"]).stdout
                .split(separator: "\n").map(String.init)
            let candidates = onCommit.filter { !excluded.contains($0) }
            let releases = candidates.compactMap(ReleaseTag.init)
            if let best = releases.max() {
                return (best, distance)
            }
            for name in candidates where !excluded.contains(name) {
                warnings.append("ignoring tag \(name): not `v` followed by a version like v1.2.3")
            }
            excluded += candidates.isEmpty ? [describedName] : candidates
        }
        return nil
    }

    private struct GitOutput {
        var status: Int32
        var stdout: String
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
        return GitOutput(status: output.status, stdout: output.stdout)
    }
}
