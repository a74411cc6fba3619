import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import Versioning

/// Versioning against real git on generated repositories, each answer compared with what git reports.
@Suite struct GitVersionResolverTests {
    func resolve(_ repository: GitRepository, allowShallow: Bool = false) async throws
        -> GitVersionResolver.Resolution
    {
        try await GitVersionResolver(runner: TestHost.runner, repository: repository.url)
            .resolve(allowShallow: allowShallow)
    }

    @Test func nearestTagAndCommitCountAgreeWithGit() async throws {
        let repository = try await GitRepository()
        try await repository.commit(2)
        try await repository.tag("v1.0.0")
        try await repository.commit(3)
        try await repository.tag("v1.1.0", annotated: true)
        try await repository.commit(4)

        let resolution = try await resolve(repository)
        let described = try #require(try await repository.describe())
        #expect(described.tag == "v1.1.0")
        #expect(resolution.version.tag == described.tag)
        #expect(resolution.version.commitsSinceTag == described.distance)
        #expect(resolution.version.commitsSinceTag == 4)
        #expect(resolution.version.buildNumber == (try await repository.commitCount()))
        #expect(resolution.version.buildNumber == 9)
        #expect(resolution.version.marketingVersion == "1.1.0")
        #expect(resolution.version.description == "1.1.0 (9)")
        #expect(!resolution.version.dirty)
        #expect(!resolution.version.shallow)
        #expect(resolution.warnings.isEmpty)
    }

    @Test func aTagOnHeadHasDistanceZero() async throws {
        let repository = try await GitRepository()
        try await repository.commit(57)
        try await repository.tag("v1.10.0")
        let version = try await resolve(repository).version
        #expect(version.description == "1.10.0 (57)")
        #expect(version.commitsSinceTag == 0)
        #expect(try await repository.describe()?.distance == 0)
    }

    @Test func tagsOnUnmergedBranchesAreNotReachable() async throws {
        let repository = try await GitRepository()
        try await repository.commit(1)
        try await repository.tag("v2.0.0")
        try await repository.git("checkout", "-q", "-b", "experiment")
        try await repository.commit(1)
        try await repository.tag("v9.0.0")
        try await repository.git("checkout", "-q", "main")
        try await repository.commit(2)
        let version = try await resolve(repository).version
        #expect(version.tag == (try await repository.describe())?.tag)
        #expect(version.marketingVersion == "2.0.0")
        #expect(version.buildNumber == 3)
    }

    /// One `git log` gives the count and the distances: through merges (a tag on a merged branch, a
    /// release tag behind it on main), and from a linked worktree, they agree with git's own.
    @Test func distancesThroughMergesAndFromAWorktreeAgreeWithGit() async throws {
        let repository = try await GitRepository()
        try await repository.commit(3)
        try await repository.tag("v1.0.0")
        try await repository.git("checkout", "-q", "-b", "feature")
        try await repository.commit(4)
        try await repository.tag("v1.1.0", annotated: true)
        try await repository.git("checkout", "-q", "main")
        try await repository.commit(2)
        try await repository.git("merge", "-q", "--no-ff", "-X", "theirs", "-m", "merge", "feature")
        try await repository.commit(1)

        let described = try #require(try await repository.describe())
        let version = try await resolve(repository).version
        #expect(version.tag == described.tag && described.tag == "v1.1.0")
        #expect(version.commitsSinceTag == described.distance)
        #expect(version.buildNumber == (try await repository.commitCount()))

        let linked = repository.url.deletingLastPathComponent().appendingPathComponent(
            "linked-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: linked) }
        try await repository.git("worktree", "add", "-q", linked.path, "HEAD~1")
        try await repository.git("pack-refs", "--all")
        let fromWorktree = try await GitVersionResolver(runner: TestHost.runner, repository: linked)
            .resolve().version
        let worktreeDescribe = try await repository.git(
            "-C", linked.path, "describe", "--tags", "--long", "--match", "v*")
        #expect(worktreeDescribe.hasPrefix("v1.1.0-\(fromWorktree.commitsSinceTag)-g"), "\(worktreeDescribe)")
        #expect(fromWorktree.buildNumber == version.buildNumber - 1)
        #expect(!fromWorktree.dirty)
    }

    @Test func theHighestSemanticVersionOnOneCommitWins() async throws {
        let repository = try await GitRepository()
        try await repository.commit(3)
        // Sorted as strings, v1.9.9 would win; by semantic version v1.10.0 does, ahead of its rc.
        for name in ["v1.2.0", "v1.9.9", "v1.10.0-rc.1", "v1.10.0", "v1.10"] {
            try await repository.tag(name)
        }
        try await repository.tag("v1.3.0", at: "HEAD~1")
        let version = try await resolve(repository).version
        #expect(version.tag == "v1.10.0")
        #expect(version.marketingVersion == "1.10.0")
        #expect(version.commitsSinceTag == 0)
    }

    @Test func thePreReleasePartIsDropped() async throws {
        let repository = try await GitRepository()
        try await repository.commit(4)
        try await repository.tag("v3.1.0-beta.2", annotated: true)
        try await repository.commit(1)
        let version = try await resolve(repository).version
        #expect(version.tag == "v3.1.0-beta.2")
        #expect(version.tag == (try await repository.describe())?.tag)
        #expect(version.marketingVersion == "3.1.0")
        #expect(version.description == "3.1.0 (5)")
        #expect(version.commitsSinceTag == 1)
    }

    @Test func tagsThatAreNotVAndDigitsAreIgnored() async throws {
        let repository = try await GitRepository()
        try await repository.commit(2)
        try await repository.tag("v2.0.0")
        try await repository.commit(1)
        try await repository.tag("vfoo")
        try await repository.tag("release-1")
        try await repository.commit(1)
        try await repository.tag("v1.2.x")
        try await repository.tag("v01.2.3")
        try await repository.commit(1)

        // git itself names the junk tag; hadeploy looks past it to the nearest real release.
        #expect(try await repository.describe()?.tag != "v2.0.0")
        let resolution = try await resolve(repository)
        #expect(resolution.version.tag == "v2.0.0")
        #expect(resolution.version.marketingVersion == "2.0.0")
        #expect(resolution.version.commitsSinceTag == 3)
        #expect(resolution.version.buildNumber == 5)
        for junk in ["vfoo", "v1.2.x", "v01.2.3"] {
            #expect(resolution.warnings.contains { $0.contains("ignoring tag \(junk)") }, "\(junk)")
        }
        #expect(
            !resolution.warnings.contains { $0.contains("release-1") }, "not a v* tag: not even looked at")
    }

    @Test func onlyJunkTagsMeansNoVersion() async throws {
        let repository = try await GitRepository()
        try await repository.commit(2)
        try await repository.tag("vnext")
        try await repository.tag("version-2")
        let resolution = try await resolve(repository)
        #expect(resolution.version.marketingVersion == "0.0.0")
        #expect(resolution.version.tag == nil)
        #expect(resolution.warnings.contains { $0.contains("no release tag") })
    }

    @Test func noTagGivesZeroWithAWarning() async throws {
        let repository = try await GitRepository()
        try await repository.commit(6)
        #expect(try await repository.describe() == nil)
        let resolution = try await resolve(repository)
        #expect(resolution.version.description == "0.0.0 (6)")
        #expect(resolution.version.tag == nil)
        #expect(resolution.version.commitsSinceTag == 6)
        #expect(resolution.warnings.count == 1)
        #expect(resolution.warnings[0].contains("using 0.0.0"))
        #expect(resolution.warnings[0].contains("git tag v1.0.0"))
    }

    @Test func uncommittedChangesToTrackedFilesAreDirty() async throws {
        let repository = try await GitRepository()
        try await repository.commit(1)
        try await repository.tag("v1.0.0")
        let untracked = repository.url.appendingPathComponent("notes.txt")
        try Data("scratch".utf8).write(to: untracked)
        #expect(try await resolve(repository).version.dirty == false, "untracked files do not count")

        try Data("changed\n".utf8).write(to: repository.url.appendingPathComponent("counter.txt"))
        #expect(try await resolve(repository).version.dirty == true)

        try await repository.git("add", "counter.txt")
        #expect(try await resolve(repository).version.dirty == true, "staged but not committed")
    }

    @Test func aShallowCloneIsRefusedWithTheFix() async throws {
        let origin = try await GitRepository()
        try await origin.commit(5)
        try await origin.tag("v1.4.0")
        try await origin.commit(2)
        let clone = try await GitRepository()
        try FileManager.default.removeItem(at: clone.url)
        _ = try await TestHost.runner.checked(
            ProcessCommand(
                "git",
                ["clone", "-q", "--depth", "1", "file://\(origin.url.path)", clone.url.path],
                environment: GitRepository.environment),
            timeout: .seconds(60))
        #expect(try await clone.git("rev-parse", "--is-shallow-repository") == "true")

        let error = await #expect(throws: VersioningError.self) { try await resolve(clone) }
        let message = try #require(error?.description)
        #expect(message.contains("shallow clone"))
        #expect(message.contains("fetch-depth: 0"))
        #expect(message.contains("git fetch --unshallow"))
        #expect(message.contains("--allow-shallow"))
        #expect(error?.exitStatus == .config)

        let accepted = try await resolve(clone, allowShallow: true)
        #expect(accepted.version.shallow)
        #expect(accepted.version.buildNumber == (try await clone.commitCount()))
        #expect(accepted.version.buildNumber == 1)
        #expect(accepted.warnings.contains { $0.contains("shallow clone") && $0.contains("--unshallow") })
    }

    @Test func resolvingNeverWritesAFile() async throws {
        let repository = try await GitRepository()
        try await repository.commit(3)
        try await repository.tag("v1.0.0")
        try await repository.commit(1)
        try await repository.tag("vjunk")
        // A tracked file with a new modification date but the same content: a plain `git status`
        // refreshes the index and rewrites .git/index; resolving the version must not.
        let file = repository.url.appendingPathComponent("counter.txt")
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file.path)
        let before = try repository.snapshot()
        let resolution = try await resolve(repository)
        #expect(!resolution.version.dirty)
        #expect(try repository.snapshot() == before)

        // The check above can see a write: git's own status does write here.
        _ = try await repository.git("status", "--porcelain")
        #expect(try repository.snapshot() != before)
    }

    @Test func notARepositoryAndNoCommitsAreExplained() async throws {
        let directory = try temporaryDirectory("nogit")
        defer { try? FileManager.default.removeItem(at: directory) }
        let notRepo = await #expect(throws: VersioningError.self) {
            try await GitVersionResolver(runner: TestHost.runner, repository: directory).resolve()
        }
        #expect(notRepo?.description.contains("is not inside a git repository") == true)

        let empty = try await GitRepository()
        let noCommits = await #expect(throws: VersioningError.self) { try await resolve(empty) }
        #expect(noCommits?.description.contains("has no commits yet") == true)
    }

    @Test func jsonHasTheDocumentedKeys() throws {
        let version = GitVersion(
            marketingVersion: "1.10.0", buildNumber: 57, tag: nil, commitsSinceTag: 57, dirty: false,
            shallow: false)
        let object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(version)) as? [String: Any])
        #expect(
            Set(object.keys)
                == ["marketingVersion", "buildNumber", "tag", "commitsSinceTag", "dirty", "shallow"])
        #expect(object["tag"] is NSNull)
        #expect(object["buildNumber"] as? Int == 57)
    }
}
