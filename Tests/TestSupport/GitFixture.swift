import Foundation
import HADeployCore

/// A throw-away git repository for tests: init, commit everything, tag — with a fixed identity and
/// none of the user's git configuration.
public enum GitFixture {
    public static let identity = [
        "GIT_AUTHOR_NAME": "hadeploy-test", "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "hadeploy-test", "GIT_COMMITTER_EMAIL": "test@example.com",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    ]

    /// `git init`, commit every file not ignored, and tag that commit (when `tag` is given).
    public static func commitAll(at directory: URL, message: String = "app", tag: String? = nil) async throws
    {
        var steps = [["init", "-q"], ["add", "-A"], ["commit", "-qm", message]]
        if let tag { steps.append(["tag", tag]) }
        for arguments in steps {
            _ = try await LiveProcessRunner().checked(
                ProcessCommand("git", ["-C", directory.path] + arguments, environment: identity),
                timeout: .seconds(30))
        }
    }
}
