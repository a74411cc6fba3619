import Foundation
import HADeployCore
import TestSupport
import Testing
import Yams

@testable import Templating

/// `{{VAR}}` in a `.yml` template becomes a scalar that YAML parsers read back as exactly the value.
@Suite struct YAMLEscapingTests {
    static let awkward: [String] = [
        ": ", "a: b", "key:value", "#", "a #b", "# start", "\"quoted\"", "'single'", "it's", "  leading",
        "trailing  ", " ", "", "unicode ☕ café 日本語", "emoji 👩‍👩‍👧", "line1\nline2", "multi\n\nblank\n",
        "\r\nwindows", "tab\tsep", "yes", "no", "on", "off", "y", "n", "Y", "true", "True", "FALSE",
        "null", "Null", "NULL", "~", "123", "-1", "+1", "0x1F", "0o17", "017", "1e3", "1_000", ".5",
        "3.14", ".inf", "-.inf", ".NaN", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "12:30:45", "1:20",
        "-", "- item", "? q", "[a]", "{a: 1}", "*alias", "&anchor", "!tag", "!!str", "%directive",
        "@at", "`tick", "|", ">", "a\\b", "\\n literal", "=", "<<", "a,b", "a]b", "com.example.app",
        "ABCDE12345", "https://ha.local:8123/path?q=1#frag", "C:\\path", "wall-kitchen", "---", "...",
        "\u{7}bell", "\u{1B}[0m", "\u{7F}", "\u{85}nel", "\u{80}c1", "\u{9F}", "\u{A0}nbsp",
        "\u{2028}ls", "\u{FEFF}bom", "x\u{0}y", String(repeating: "long ", count: 60),
    ]

    /// A template using the value in the places a YAML file uses scalars.
    static let template = """
        plain: {{VALUE}}
        nested:
          deeper: {{VALUE}}
        list:
          - {{VALUE}}
        flow: [{{VALUE}}, end]
        map: {k: {{VALUE}}}

        """

    func render(_ value: String) throws -> String {
        let directory = try temporaryDirectory("yaml")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.template.utf8).write(to: directory.appendingPathComponent("t.yml.mustache"))
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: ["VALUE": value])
        #expect(files.map(\.relativePath) == ["t.yml"])
        return files[0].contents
    }

    func values(in document: [String: Any]) -> [Any?] {
        [
            document["plain"], (document["nested"] as? [String: Any])?["deeper"],
            (document["list"] as? [Any])?.first, (document["flow"] as? [Any])?.first,
            (document["map"] as? [String: Any])?["k"],
        ]
    }

    @Test func roundTripsThroughYams() throws {
        // Yams decodes scalars like `String(data:encoding: .utf8)`, which drops a leading U+FEFF
        // whatever the escaping (PyYAML below keeps it, from the very same document).
        for value in Self.awkward where !value.hasPrefix("\u{FEFF}") {
            let text = try render(value)
            let document = try #require(try Yams.load(yaml: text) as? [String: Any], "\(text)")
            for parsed in values(in: document) {
                #expect(parsed as? String == value, "\(value.debugDescription) → \(text)")
            }
            #expect((document["flow"] as? [Any])?.last as? String == "end")
        }
    }

    @Test func roundTripsThroughPyYAML() async throws {
        var documents: [String] = []
        for value in Self.awkward { documents.append(try render(value)) }
        let directory = try temporaryDirectory("pyyaml")
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("documents.json")
        try JSONSerialization.data(withJSONObject: documents).write(to: input)
        // Each document parsed with yaml.safe_load; a non-string comes back as its type's name.
        let script = """
            import json, sys, yaml
            out = []
            for text in json.load(open(sys.argv[1], encoding="utf-8")):
                try:
                    d = yaml.safe_load(text)
                    got = [d["plain"], d["nested"]["deeper"], d["list"][0], d["flow"][0], d["map"]["k"]]
                    out.append([g if isinstance(g, str) else "<%s: %r>" % (type(g).__name__, g) for g in got])
                except Exception as e:
                    out.append(["<error: %s>" % e])
            json.dump(out, sys.stdout)
            """
        let output = try await ReferenceTools.pythonScript(script, arguments: [input.path])
        let parsed = try #require(
            try JSONSerialization.jsonObject(with: output.standardOutput) as? [[String]])
        #expect(parsed.count == Self.awkward.count)
        for (index, value) in Self.awkward.enumerated() where index < parsed.count {
            for got in parsed[index] {
                #expect(got == value, "\(value.debugDescription) → \(documents[index])")
            }
        }
    }

    @Test func simpleValuesStayReadable() {
        #expect(YAMLScalar.encode("com.example.hadashboard") == "com.example.hadashboard")
        #expect(YAMLScalar.encode("ABCDE12345") == "ABCDE12345")
        #expect(YAMLScalar.encode("wall-kitchen") == "wall-kitchen")
        #expect(YAMLScalar.encode("yes") == "\"yes\"")
        #expect(YAMLScalar.encode("123") == "\"123\"")
        #expect(YAMLScalar.encode("a: b") == "\"a: b\"")
        #expect(YAMLScalar.encode("") == "\"\"")
    }
}
