import Foundation
import HADeployCore
import Mustache
import TestSupport
import Testing
import Yams

@testable import Templating

@Suite struct TemplateRendererTests {
    /// Writes `files` (relative path → text) into a fresh templates directory.
    func templates(_ files: [String: String]) throws -> URL {
        let directory = try temporaryDirectory("templates")
        for (path, text) in files {
            let url = directory.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return directory
    }

    @Test func everyMissingKeyIsReportedOnceWithEveryPlaceItIsUsed() throws {
        let directory = try templates([
            "Config/project.yml.mustache": """
            name: {{APP}}
            team: {{TEAM}}
            {{! a comment {{NOT_A_KEY}} is no reference }}
            {{#SECTION}}{{INSIDE}}{{/SECTION}}
            {{^OPTIONAL}}fallback{{/OPTIONAL}}
            again:   {{ TEAM }} and {{{RAW}}}
            amp: {{&AMP}}

            """,
            "ExportOptions.plist.mustache":
                "<plist>\n  <string>{{TEAM}}</string>\n\t{{MISSING2}}\n</plist>\n",
            "notes.txt": "{{IGNORED}} is not a template",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let renderer = TemplateRenderer(
            fileSystem: TestHost.fileSystem,
            templatesDirectory: directory, displayRoot: directory.deletingLastPathComponent())
        let error = #expect(throws: TemplatingError.self) {
            try renderer.render(values: ["APP": "x"], envFileName: "ci.env")
        }
        guard case .missingKeys(let keys, let envFile) = error else {
            Issue.record("expected missing keys, got \(String(describing: error))")
            return
        }
        #expect(envFile == "ci.env")
        let root = directory.lastPathComponent
        let yml = "\(root)/Config/project.yml.mustache"
        let plist = "\(root)/ExportOptions.plist.mustache"
        #expect(
            keys.map { "\($0.key) @ " + $0.usedAt.map(\.description).joined(separator: ", ") } == [
                "AMP @ \(yml):7:6",
                "MISSING2 @ \(plist):3:2",
                "RAW @ \(yml):6:25",
                "TEAM @ \(yml):2:7, \(yml):6:10, \(plist):2:11",
            ])
        let message = try #require(error?.description)
        #expect(message.hasPrefix("4 key(s) used by the templates are not set in ci.env or the environment:"))
        #expect(message.contains("  TEAM  (used at \(yml):2:7, \(yml):6:10, \(plist):2:11)"))
        #expect(message.contains("see .env.example"))
        #expect(error?.exitStatus == .config)
    }

    @Test func linesAreCountedInCRLFTemplates() throws {
        let directory = try templates(["w.txt.mustache": "a\r\nb: {{B}}\rc: {{C}}\r\n"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: TemplatingError.self) {
            try TemplateRenderer(
                fileSystem: TestHost.fileSystem, templatesDirectory: directory, displayRoot: directory
            ).render(values: [:])
        }
        guard case .missingKeys(let keys, _) = error else {
            Issue.record("expected missing keys")
            return
        }
        #expect(keys.flatMap(\.usedAt).map(\.description) == ["w.txt.mustache:2:4", "w.txt.mustache:3:4"])
    }

    @Test func theRendererNeverReadsTheEnvironment() throws {
        // PATH and HOME are set in every test process; the renderer must still call them missing.
        let directory = try templates(["t.txt.mustache": "{{PATH}} {{HOME}}"])
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(ProcessInfo.processInfo.environment["PATH"] != nil)
        let error = #expect(throws: TemplatingError.self) {
            try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory).render(
                values: [:])
        }
        guard case .missingKeys(let keys, _) = error else {
            Issue.record("expected missing keys")
            return
        }
        #expect(keys.map(\.key) == ["HOME", "PATH"])
    }

    @Test func anEmptyValueIsSuppliedNotMissing() throws {
        let directory = try templates(["t.txt.mustache": "team=[{{TEAM}}]"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: ["TEAM": ""])
        #expect(files.map(\.contents) == ["team=[]"])
    }

    @Test func textTemplatesInsertValuesAsIs() throws {
        let directory = try templates(["a/b/run.sh.mustache": "echo {{V}} {{{V}}}\n"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: ["V": "<a & 'b'>"])
        #expect(files.map(\.relativePath) == ["a/b/run.sh"])
        #expect(files.map(\.contents) == ["echo <a & 'b'> <a & 'b'>\n"])
    }

    /// Rendering must match plain Mustache (spec behaviour such as standalone lines) apart from escaping.
    @Test(arguments: [
        "{{! header comment }}\nname: {{NAME}}\n",
        "{{#FLAG}}\nflag: on\n{{/FLAG}}\nname: {{NAME}}\n",
        "  {{^MISSING}}\nfallback\n  {{/MISSING}}\nend\n",
        "{{=<% %>=}}\nname: <% NAME %>\n",
        "name: {{NAME}}\r\nnext: x\r\n",
    ])
    func renderingFollowsTheMustacheSpec(template: String) throws {
        let directory = try templates(["t.txt.mustache": template])
        defer { try? FileManager.default.removeItem(at: directory) }
        let values = ["NAME": "n", "FLAG": "yes"]
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: values)
        let plain = try MustacheTemplate(string: template).render(values)
        #expect(files.first?.contents == plain)
    }

    struct SyntaxCase: Sendable, CustomTestStringConvertible {
        var template: String
        var line: Int
        var column: Int
        var message: String
        var testDescription: String { template.debugDescription }
    }

    @Test(arguments: [
        SyntaxCase(template: "abc {{/X}}\n", line: 1, column: 5, message: "closed with a different name"),
        SyntaxCase(template: "x\r\ny: {{{RAW}\r\n", line: 2, column: 4, message: "not closed"),
        SyntaxCase(
            template: "one\n  {{#SEC}}\nx\n{{/OTHER}}\n", line: 4, column: 1,
            message: "closed with a different name"),
        SyntaxCase(template: "one\ntwo: {{NAME\nthree\n", line: 2, column: 6, message: "not closed"),
        SyntaxCase(
            template: "one: {{VALUE}\nother: {{X}}\n", line: 1, column: 6, message: "not closed"),
        SyntaxCase(template: "a\n\n{{#OPEN}}\nnever closed\n", line: 3, column: 1, message: "never closed"),
    ])
    func syntaxErrorsNameFileLineAndColumn(_ sample: SyntaxCase) throws {
        let directory = try templates(["sub/project.yml.mustache": sample.template])
        defer { try? FileManager.default.removeItem(at: directory) }
        let renderer = TemplateRenderer(
            fileSystem: TestHost.fileSystem, templatesDirectory: directory, displayRoot: directory)
        let error = #expect(throws: TemplatingError.self) {
            // No values at all: a broken template must be reported as broken, not as missing keys.
            try renderer.render(values: [:])
        }
        guard case .syntax(let location, let message, _) = error else {
            Issue.record("expected a syntax error, got \(String(describing: error))")
            return
        }
        #expect(location.description == "sub/project.yml.mustache:\(sample.line):\(sample.column)")
        #expect(message.contains(sample.message), "\(message)")
        #expect(
            error?.description.hasPrefix("sub/project.yml.mustache:\(sample.line):\(sample.column): ") == true
        )
        #expect(error?.exitStatus == .config)
    }

    @Test(arguments: [
        ("# Values in {{ }} come from .env\nx: {{A}}\n", "t.yml.mustache:1:13"),
        ("x: {{A}}\ny: {{{ . }}}\n", "t.yml.mustache:2:4"), ("{{&.}}", "t.yml.mustache:1:1"),
    ])
    func aTagWithoutAKeyIsRefusedRatherThanDumpingEveryValue(template: String, place: String) throws {
        let directory = try templates(["t.yml.mustache": template])
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: TemplatingError.self) {
            try TemplateRenderer(
                fileSystem: TestHost.fileSystem, templatesDirectory: directory, displayRoot: directory
            )
            .render(values: ["A": "a", "HA_TOKEN": "secret-token-value"])
        }
        guard case .syntax(let location, let message, _) = error else {
            Issue.record("expected a syntax error, got \(String(describing: error))")
            return
        }
        #expect(location.description == place)
        #expect(message.contains("the environment and its secrets"))
        #expect(error?.description.contains("secret-token-value") == false)
    }

    @Test func theImplicitIteratorInsideASectionIsFine() throws {
        let directory = try templates(["t.txt.mustache": "{{#A}}[{{.}}]{{/A}}"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: ["A": "a"])
        #expect(files.first?.contents == "[a]")
    }

    @Test func aDirectoryWithoutTemplatesIsAnError() throws {
        let directory = try templates(["README.md": "nothing"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: TemplatingError.self) {
            try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory).render(
                values: [:])
        }
        #expect(error?.description.hasPrefix("no *.mustache templates under") == true)
    }

    @Test func theCommittedTemplatesRenderWithTheExampleEnv() throws {
        try renderCommittedTemplates()
    }

    func renderCommittedTemplates() throws {
        let root = ReferenceTools.repositoryRoot
        let example = try DotEnv.load(from: root.appendingPathComponent(".env.example"))
        var values = example.values
        values["APPLE_TEAM_ID"] = "ABCDE12345"
        values["BUNDLE_ID"] = "com.example.ha-dashboard"
        let files = try TemplateRenderer(
            fileSystem: TestHost.fileSystem,
            templatesDirectory: root.appendingPathComponent("Templates"), displayRoot: root
        ).render(values: values)
        #expect(Set(files.map(\.relativePath)) == ["ExportOptions.plist", "project.yml"])

        let project = try #require(files.first { $0.relativePath == "project.yml" }?.contents)
        let spec = try #require(try Yams.load(yaml: project) as? [String: Any])
        let base = (spec["settings"] as? [String: Any])?["base"] as? [String: Any]
        #expect(base?["DEVELOPMENT_TEAM"] as? String == "ABCDE12345")
        #expect(base?["PRODUCT_BUNDLE_IDENTIFIER"] as? String == "com.example.ha-dashboard")
        #expect(base?["MARKETING_VERSION"] as? String == "0.0.0")
        #expect(base?["CURRENT_PROJECT_VERSION"] as? String == "0")
        #expect(!project.contains("{{"), "every tag rendered")

        let plistText = try #require(files.first { $0.relativePath == "ExportOptions.plist" }?.contents)
        let plist = try PropertyListSerialization.propertyList(from: Data(plistText.utf8), format: nil)
        #expect((plist as? [String: Any])?["teamID"] as? String == "ABCDE12345")
    }
}
