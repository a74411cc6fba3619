import Foundation
import TestSupport
import Testing

@Suite struct RenderCommandTests {
    func modificationDate(_ project: Project, _ path: String) throws -> Date? {
        try FileManager.default.attributesOfItem(atPath: project.url.appendingPathComponent(path).path)[
            .modificationDate] as? Date
    }

    @Test func writesOnlyWhatChangedAndCheckTellsCI() async throws {
        let project = try await Project(commits: 1)
        try project.write("APPLE_TEAM_ID=ABCDE12345\nBUNDLE_ID=com.example.app\n", to: ".env")

        let first = try await project.run("render")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr == "Generated/ExportOptions.plist: created\nGenerated/project.yml: created\n")
        #expect(try project.read("Generated/project.yml").contains("DEVELOPMENT_TEAM: ABCDE12345"))
        #expect(try project.read("Generated/ExportOptions.plist").contains("<string>ABCDE12345</string>"))

        // Backdate the outputs: a second render must leave them (and their dates) alone.
        let past = Date(timeIntervalSince1970: 1_500_000_000)
        for path in ["Generated/project.yml", "Generated/ExportOptions.plist"] {
            try FileManager.default.setAttributes(
                [.modificationDate: past], ofItemAtPath: project.url.appendingPathComponent(path).path)
        }
        let second = try await project.run("render")
        #expect(second.status == 0)
        #expect(
            second.stderr == "Generated/ExportOptions.plist: unchanged\nGenerated/project.yml: unchanged\n")
        #expect(try modificationDate(project, "Generated/project.yml") == past)

        let upToDate = try await project.run("render", "--check")
        #expect(upToDate.status == 0)
        #expect(upToDate.stderr == "2 file(s) up to date\n")

        // The environment overrides .env; --check reports without writing.
        let stale = try await project.run("render", "--check", environment: ["APPLE_TEAM_ID": "ZYXWV98765"])
        #expect(stale.status == 1)
        #expect(
            stale.stderr
                == "Generated/ExportOptions.plist: would be updated\nGenerated/project.yml: would be updated\n"
                + "2 file(s) out of date: run `hadeploy render`\n")
        #expect(try modificationDate(project, "Generated/project.yml") == past)
        #expect(try project.read("Generated/project.yml").contains("DEVELOPMENT_TEAM: ABCDE12345"))

        let update = try await project.run("render", environment: ["APPLE_TEAM_ID": "ZYXWV98765"])
        #expect(update.status == 0)
        #expect(try project.read("Generated/project.yml").contains("DEVELOPMENT_TEAM: ZYXWV98765"))
        #expect(try modificationDate(project, "Generated/project.yml") != past)
    }

    @Test func optionsChooseFilesAndDirectories() async throws {
        let project = try await Project(commits: 1)
        try project.write("NAME=it's: here\n", to: "ci.env")
        try project.write("name: {{NAME}}\n", to: "tpl/deep/app.yml.mustache")
        let result = try await project.run(
            "render", "--env-file", "ci.env", "--templates", "tpl", "--out", "out")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try project.read("out/deep/app.yml") == "name: \"it's: here\"\n")
        let missingCheck = try await project.run(
            "render", "--env-file", "ci.env", "--templates", "tpl", "--out", "elsewhere", "--check")
        #expect(missingCheck.status == 1)
        #expect(missingCheck.stderr.contains("elsewhere/deep/app.yml: would be created"))
        #expect(!FileManager.default.fileExists(atPath: project.url.appendingPathComponent("elsewhere").path))
    }

    @Test func missingKeysAreAllReportedWithExit78() async throws {
        let project = try await Project(commits: 1)
        let result = try await project.run("render")
        #expect(result.status == 78)
        #expect(
            result.stderr.contains(
                "error: 2 key(s) used by the templates are not set in .env or the environment:"))
        #expect(
            result.stderr.contains(
                "  BUNDLE_ID  (used at Templates/project.yml.mustache:4:19, Templates/project.yml.mustache:8:32)"
            ))
        #expect(
            result.stderr.contains(
                "  APPLE_TEAM_ID  (used at Templates/ExportOptions.plist.mustache:5:13, "
                    + "Templates/project.yml.mustache:7:23)"))
        #expect(!FileManager.default.fileExists(atPath: project.url.appendingPathComponent("Generated").path))
    }

    @Test func onGitHubActionsEveryMissingKeyIsAnnotatedWhereItIsUsed() async throws {
        let project = try await Project(commits: 1)
        let result = try await project.run("render", environment: ["GITHUB_ACTIONS": "true"])
        #expect(result.status == 78)
        let annotations = result.stderr.split(separator: "\n").filter { $0.hasPrefix("::error ") }
        #expect(
            annotations.contains(
                "::error file=Templates/project.yml.mustache,line=4,col=19,title=hadeploy::BUNDLE_ID is not set "
                    + "in .env or the environment"), "\(result.stderr)")
        #expect(annotations.count == 4, "one per place a missing key is used: \(annotations)")
        // The human message is still there, and without GITHUB_ACTIONS there are no workflow commands.
        #expect(result.stderr.contains("error: 2 key(s) used by the templates are not set"))
        let plain = try await project.run("render")
        #expect(!plain.stderr.contains("::error"))
    }

    @Test func aSyntaxErrorIsPlacedWithExit78() async throws {
        let project = try await Project(commits: 1)
        try project.write("a: 1\nb: {{#LIST}}\nc: {{/LISTS}}\n", to: "T/x.yml.mustache")
        let result = try await project.run("render", "--templates", "T")
        #expect(result.status == 78)
        #expect(
            result.stderr.hasPrefix("error: T/x.yml.mustache:3:4: template syntax error:"), "\(result.stderr)"
        )
    }
}
