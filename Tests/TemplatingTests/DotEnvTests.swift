import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import Templating

@Suite struct DotEnvTests {
    @Test func unparsableLinesAreReportedWithTheirOwnLineNumber() throws {
        let text = "A=1\n\n\n   bad line here\nB=\"multi\nline\"\n\nC D\nE=2\n"
        let env = try DotEnv(parsing: text, file: "ci.env")
        #expect(env.values == ["A": "1", "B": "multi\nline", "E": "2"])
        #expect(
            env.warnings == [
                "ci.env:4: could not parse this line; it was ignored",
                "ci.env:8: could not parse this line; it was ignored",
            ])
    }

    @Test func locationsPointAtTheLastAssignment() throws {
        let env = try DotEnv(parsing: "\n# c\nA=1\nB=\"x\ny\"\n\nA=2\r\nC\n", file: ".env")
        #expect(env.locations["A"]?.description == ".env:7")
        #expect(env.locations["B"]?.description == ".env:4")
        #expect(env.locations["C"]?.description == ".env:8")
        #expect(env.keys == ["A", "B", "C"])
        #expect(env.values["C"] == nil)
    }

    @Test func theEnvironmentOverridesTheFile() throws {
        let env = try DotEnv(parsing: "HA_SERVER=http://file:8123\nHA_TOKEN=from-file\nBUNDLE_ID=com.x\n")
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
        let directory = try temporaryDirectory("dotenv-latin1")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(".env")
        try Data([0x41, 0x3D, 0xE9, 0x0A]).write(to: file)  // "A=é" in Latin-1
        let error = #expect(throws: TextFileError.self) { try DotEnv.load(from: file) }
        #expect(
            error?.description == "\(file.path):1:3: error: not UTF-8 text (an invalid byte sequence here)")
        #expect(error?.exitStatus == .config)
    }

    @Test func aDoublingExpansionStopsAtTheKeysLine() throws {
        var lines = ["# doubling", "B0=0123456789abcdef"]
        for index in 1...40 { lines.append("B\(index)=${B\(index - 1)}${B\(index - 1)}") }
        let error = #expect(throws: TemplatingError.self) {
            try DotEnv(parsing: lines.joined(separator: "\n"), file: "bomb.env")
        }
        // 16 bytes doubled 17 times is 2 MiB, the first past the 1 MiB cap.
        #expect(error?.description.hasPrefix("bomb.env:19: error: B17 expands to more than 1 MiB") == true)
        #expect(error?.exitStatus == .config)
    }

    @Test func manyValuesTogetherAreCappedToo() throws {
        // Each value is under the per-value cap; 40 of them at 1 MiB pass the total cap.
        var lines = ["A=" + String(repeating: "x", count: 1 << 19), "B=${A}${A}"]
        for index in 0..<40 { lines.append("C\(index)=${B}") }
        let error = #expect(throws: TemplatingError.self) {
            try DotEnv(parsing: lines.joined(separator: "\n"))
        }
        #expect(error?.description.contains("makes the expanded values together longer than 32 MiB") == true)
    }

    /// `keys` keys, each referring to an earlier one, plus a fifth as many unterminated quotes.
    static func bigEnv(keys: Int) -> String {
        var text = ""
        for index in 0..<keys { text += "K\(index)=v${K\(index / 2)}x\n" }
        for _ in 0..<(keys / 5) { text += "Q=\"unterminated\n" }
        return text
    }

    @Test func parsingIsLinearInTheNumberOfKeys() throws {
        // The probe measured 25 s for 100,000 keys (quadratic). Not a speed claim (BENCHMARKS.md has
        // those): four times the input must cost about four times the work, not sixteen, whatever
        // the machine's load. The best of two runs each evens out a busy moment.
        func best(_ text: String) throws -> Duration {
            var times: [Duration] = []
            for _ in 0..<2 {
                let started = ContinuousClock.now
                let env = try DotEnv(parsing: text, file: "big.env")
                times.append(ContinuousClock.now - started)
                #expect(env.values["K1"] == "vvxx")
            }
            return times.min()!
        }
        let small = try best(Self.bigEnv(keys: 25_000))
        let large = try best(Self.bigEnv(keys: 100_000))
        #expect(try DotEnv(parsing: Self.bigEnv(keys: 100_000)).keys.count == 100_000)
        #expect(large / small < 8, "25,000 keys: \(small), 100,000 keys: \(large)")
    }

    @Test func expansionKeepsItsMeaningUnderTheCap() {
        #expect(DotEnv.expand("a${X}b${Y:-d}c", lookup: { $0 == "X" ? "1" : nil }) == "a1bdc")
        #expect(DotEnv.expand("${A:x}${B}", lookup: { _ in "v" }) == "${A:x}v")
        #expect(DotEnv.expand("${${${x", lookup: { _ in "v" }) == "${${${x")
        #expect(DotEnv.expand("${X}${X}", limit: 3, lookup: { _ in "ab" }) == nil)
        #expect(DotEnv.expand("${X}${X}", limit: 4, lookup: { _ in "ab" }) == "abab")
    }
}
