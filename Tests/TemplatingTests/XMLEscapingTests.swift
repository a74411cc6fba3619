import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import Templating

/// `{{VAR}}` in a `.plist` template is XML-escaped, so the value survives an XML parser exactly.
@Suite struct XMLEscapingTests {
    static let values = [
        "<&>\"'", "Tom & Jerry", "&amp; stays literal", "a]]>b", "</string><key>x</key>", "unicode ☕ 日本",
        "line1\nline2", "tab\there", "cr\rlf\r\n", "  spaced  ", "", "ABCDE12345",
    ]

    static let template = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
            <key>value</key>
            <string>{{VALUE}}</string>
            <key>raw</key>
            <string>{{{RAW}}}</string>
        </dict>
        </plist>

        """

    func render(_ value: String, raw: String = "r") throws -> String {
        let directory = try temporaryDirectory("plist")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.template.utf8).write(
            to: directory.appendingPathComponent("ExportOptions.plist.mustache"))
        let files = try TemplateRenderer(fileSystem: TestHost.fileSystem, templatesDirectory: directory)
            .render(
                values: [
                    "VALUE": value, "RAW": raw,
                ])
        return try #require(files.first).contents
    }

    @Test func roundTripsThroughPythonPlistlib() async throws {
        var documents: [String] = []
        for value in Self.values { documents.append(try render(value)) }
        let directory = try temporaryDirectory("plistlib")
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("documents.json")
        try JSONSerialization.data(withJSONObject: documents).write(to: input)
        let script = """
            import json, plistlib, sys
            out = []
            for text in json.load(open(sys.argv[1], encoding="utf-8")):
                try:
                    out.append(plistlib.loads(text.encode("utf-8"))["value"])
                except Exception as e:
                    out.append("<error: %s>" % e)
            json.dump(out, sys.stdout)
            """
        let output = try await ReferenceTools.pythonScript(script, arguments: [input.path])
        let parsed = try #require(try JSONSerialization.jsonObject(with: output.standardOutput) as? [String])
        #expect(parsed == Self.values)
    }

    @Test func roundTripsThroughFoundation() throws {
        for value in Self.values {
            let text = try render(value)
            let plist = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil)
            #expect((plist as? [String: Any])?["value"] as? String == value, "\(value.debugDescription)")
        }
    }

    @Test func tripleMustacheInsertsRaw() throws {
        let text = try render("x", raw: "<b>&amp;</b>")
        #expect(text.contains("<string><b>&amp;</b></string>"))
        #expect(try render("<&>").contains("<string>&lt;&amp;&gt;</string>"))
    }
}
