import Foundation
import HADeployCore

/// The source tree as it is on disk, in a form a remote builder can unpack: `git archive` of HEAD,
/// plus a tar of what differs from HEAD (edited and untracked files, and the rendered `Generated/`
/// files even where `.gitignore` hides them), plus the tracked files deleted since HEAD.
public struct SourceSnapshot: Sendable {
    /// `git archive --format=tar HEAD`.
    public var head: Data
    /// Edited, added and untracked (not ignored) files, and `extraPaths`; nil when there are none.
    public var changes: Data?
    /// The repository-relative paths of the files in `changes`.
    public var changedPaths: [String]
    /// Tracked files missing from the working tree.
    public var deleted: [String]

    /// Takes a snapshot of `root`. `extraPaths` (relative) are added to the changes when they exist.
    public static func take(
        root: URL, runner: any ProcessRunner, fileSystem: any FileSystem, extraPaths: [String] = [],
        excluding outputs: String = ".hadeploy/"
    ) async throws -> SourceSnapshot {
        func git(_ arguments: [String]) async throws -> ProcessOutput {
            try await runner.checked(
                ProcessCommand("git", ["-C", root.path] + arguments), timeout: .seconds(120))
        }
        func paths(_ output: ProcessOutput) -> [String] {
            output.stdout.split(separator: "\0").map(String.init)
        }
        let head = try await git(["archive", "--format=tar", "HEAD"]).standardOutput
        let deleted = Set(paths(try await git(["ls-files", "-z", "--deleted"])))
        var changed = Set(
            paths(try await git(["ls-files", "-z", "--modified", "--others", "--exclude-standard"])))
        changed.subtract(deleted)
        for extra in extraPaths {
            let url = root.appendingPathComponent(extra)
            var isDirectory: ObjCBool = false
            guard fileSystem.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                continue
            }
            if isDirectory.boolValue {
                for subpath in (try? fileSystem.subpathsOfDirectory(atPath: url.path)) ?? [] {
                    let attributes = try? fileSystem.attributesOfItem(
                        atPath: url.appendingPathComponent(subpath).path)
                    guard attributes?[.type] as? FileAttributeType == .typeRegular else { continue }
                    changed.insert(extra + "/" + subpath)
                }
            } else {
                changed.insert(extra)
            }
        }
        let changedPaths = changed.filter { !$0.hasPrefix(outputs) }.sorted()
        var changes: Data?
        if !changedPaths.isEmpty {
            // tar reads the names NUL-separated from a file: any byte may appear in a path.
            let list = fileSystem.temporaryDirectory.appendingPathComponent(
                "hadeploy-snapshot-\(UUID().uuidString).list")
            try fileSystem.write(Data(changedPaths.joined(separator: "\0").utf8), to: list, options: [])
            defer { try? fileSystem.removeItem(at: list) }
            changes = try await runner.checked(
                ProcessCommand("tar", ["-cf", "-", "-C", root.path, "--null", "-T", list.path]),
                timeout: .seconds(300)
            ).standardOutput
        }
        return SourceSnapshot(
            head: head, changes: changes, changedPaths: changedPaths, deleted: deleted.sorted())
    }
}
