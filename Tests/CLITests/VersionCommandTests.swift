import Foundation
import TestSupport
import Testing

@Suite struct VersionCommandTests {
    @Test func plainOutputIsMarketingVersionAndBuildNumber() async throws {
        let project = try await Project(commits: 12, tag: "v1.10.0", tagAt: 9)
        #expect(try await project.git("rev-list", "--count", "HEAD") == "12")
        let result = try await project.run("version")
        #expect(result.status == 0)
        #expect(result.stdout == "1.10.0 (12)\n")
        #expect(result.stderr == "")
    }

    @Test func jsonHasExactlyTheDocumentedKeys() async throws {
        let project = try await Project(commits: 5, tag: "v3.1.0-beta.2", tagAt: 4)
        try project.write("changed\n", to: "devices.yaml")
        let result = try await project.run("version", "--json")
        #expect(result.status == 0)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "marketingVersion", "buildNumber", "tag", "commitsSinceTag", "dirty", "shallow",
            ])
        #expect(object["marketingVersion"] as? String == "3.1.0")
        #expect(object["buildNumber"] as? Int == 5)
        #expect(object["tag"] as? String == "v3.1.0-beta.2")
        #expect(object["commitsSinceTag"] as? Int == 1)
        #expect(object["dirty"] as? Bool == true)
        #expect(object["shallow"] as? Bool == false)
    }

    /// The app's release rule: the build number (the commit count) must exceed
    /// APP_STORE_BUILD_NUMBER_FLOOR (162), or App Store Connect refuses the upload.
    @Test func aBuildNumberNotAboveTheAppsFloorFails() async throws {
        let project = try await Project(commits: 3, tag: "v1.3.0")
        try project.write("APP_STORE_BUILD_NUMBER_FLOOR=162\n", to: ".env")
        let low = try await project.run("version")
        #expect(low.status != 0)
        #expect(low.stdout == "1.3.0 (3)\n")
        #expect(
            low.stderr.contains("build 3 does not exceed APP_STORE_BUILD_NUMBER_FLOOR (162)"), "\(low.stderr)"
        )
        try project.write("APP_STORE_BUILD_NUMBER_FLOOR=2\n", to: ".env")
        let above = try await project.run("version")
        #expect(above.status == 0 && above.stderr == "", "\(above.stderr)")
        try project.write("APP_STORE_BUILD_NUMBER_FLOOR=many\n", to: ".env")
        #expect(try await project.run("version").stderr.contains("'many', not a whole number"))
    }

    @Test func withoutATagItIsZeroWithAWarningOnStderr() async throws {
        let project = try await Project(commits: 2)
        let result = try await project.run("version")
        #expect(result.status == 0)
        #expect(result.stdout == "0.0.0 (2)\n")
        #expect(
            result.stderr.hasPrefix("warning: no release tag (v1.2.3) is reachable from HEAD; using 0.0.0."))
    }

    @Test func aShallowCloneIsRefusedUnlessAllowed() async throws {
        let origin = try await Project(commits: 4, tag: "v2.0.0")
        let clone = try await Project(commits: 0, copyProjectFiles: false)
        try FileManager.default.removeItem(at: clone.url.appendingPathComponent(".git"))
        try await clone.shell("git clone -q --depth 1 'file://\(origin.url.path)' .")

        let refused = try await clone.run("version")
        #expect(refused.status == 78)
        #expect(refused.stdout == "")
        #expect(refused.stderr.contains("error: this is a shallow clone"))
        #expect(refused.stderr.contains("`git fetch --unshallow`"))
        #expect(refused.stderr.contains("fetch-depth: 0"))

        let allowed = try await clone.run("version", "--allow-shallow")
        #expect(allowed.status == 0)
        #expect(allowed.stdout == "2.0.0 (1)\n")
        #expect(allowed.stderr.contains("warning: shallow clone"))
    }

    @Test func outsideARepositoryItIsAConfigError() async throws {
        let project = try await Project(commits: 1)
        try FileManager.default.removeItem(at: project.url.appendingPathComponent(".git"))
        let result = try await project.run("version")
        #expect(result.status == 78)
        #expect(result.stderr.contains("is not inside a git repository"))
    }

    @Test func theToolsOwnVersion() async throws {
        let project = try await Project(commits: 1)
        let result = try await project.run("--version")
        #expect(result.status == 0)
        #expect(result.stdout == "0.1.0\n")
    }
}
