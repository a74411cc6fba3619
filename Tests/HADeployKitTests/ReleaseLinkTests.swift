import Testing

@testable import HADeployKit

/// The update entity's release page: a GitHub origin, in the forms git keeps it, and nothing else.
struct ReleaseLinkTests {
    @Test func aGitHubOriginGivesItsRepositoryAndAnyOtherNone() {
        for remote in [
            "https://github.com/ha-dashboard/ios-app.git", "https://github.com/ha-dashboard/ios-app",
            "git@github.com:ha-dashboard/ios-app.git",
        ] {
            #expect(Workspace.gitHubRepository(remote) == "ha-dashboard/ios-app", "\(remote)")
        }
        for remote in [
            "https://gitlab.com/ha-dashboard/ios-app.git", "https://github.com.evil.example/a/b",
            "https://github.com/only-owner", "git@github.com:a/b/c.git", "/srv/git/ios-app.git",
        ] {
            #expect(Workspace.gitHubRepository(remote) == nil, "\(remote)")
        }
    }
}
