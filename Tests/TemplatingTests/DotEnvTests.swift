import Foundation
import Testing

@testable import Templating

@Suite struct DotEnvTests {
    @Test func unparsableLinesAreReportedWithTheirOwnLineNumber() {
        let text = "A=1\n\n\n   bad line here\nB=\"multi\nline\"\n\nC D\nE=2\n"
        let env = DotEnv(parsing: text, file: "ci.env")
        #expect(env.values == ["A": "1", "B": "multi\nline", "E": "2"])
        #expect(
            env.warnings == [
                "ci.env:4: could not parse this line; it was ignored",
                "ci.env:8: could not parse this line; it was ignored",
            ])
    }

    @Test func locationsPointAtTheLastAssignment() {
        let env = DotEnv(parsing: "\n# c\nA=1\nB=\"x\ny\"\n\nA=2\r\nC\n", file: ".env")
        #expect(env.locations["A"]?.description == ".env:7")
        #expect(env.locations["B"]?.description == ".env:4")
        #expect(env.locations["C"]?.description == ".env:8")
        #expect(env.keys == ["A", "B", "C"])
        #expect(env.values["C"] == nil)
    }

    @Test func theEnvironmentOverridesTheFile() {
        let env = DotEnv(parsing: "HA_SERVER=http://file:8123\nHA_TOKEN=from-file\nBUNDLE_ID=com.x\n")
        let merged = TemplateValues.merge(
            dotEnv: env, environment: ["HA_TOKEN": "from-ci-secret", "CI": "true"])
        #expect(merged["HA_TOKEN"] == "from-ci-secret")
        #expect(merged["HA_SERVER"] == "http://file:8123")
        #expect(merged["BUNDLE_ID"] == "com.x")
        #expect(merged["CI"] == "true")
    }

    @Test func aMissingFileIsAnEmptyEnv() throws {
        let env = try DotEnv.load(from: URL(fileURLWithPath: "/nonexistent/hadeploy/.env"))
        #expect(env.values.isEmpty)
        #expect(env.warnings.isEmpty)
    }

    @Test func aFileThatIsNotUTF8IsAnError() throws {
        let directory = try ReferenceTools.temporaryDirectory("dotenv-latin1")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(".env")
        try Data([0x41, 0x3D, 0xE9, 0x0A]).write(to: file)  // "A=é" in Latin-1
        let error = #expect(throws: TemplatingError.self) { try DotEnv.load(from: file) }
        #expect(error?.description == "cannot read \(file.path): it is not UTF-8 text")
        #expect(error?.exitStatus == .config)
    }
}
