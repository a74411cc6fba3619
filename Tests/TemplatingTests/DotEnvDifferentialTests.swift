import Foundation
import TestSupport
import Testing

@testable import Templating

/// `.env` parsing compared with python-dotenv's `dotenv_values` on awkward files.
@Suite struct DotEnvDifferentialTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var environment: [String: String] = [:]
        var testDescription: String { name }
    }

    static let corpus: [Case] = [
        Case(name: "plain", text: "A=1\nB=two words\nC= spaced value  \nlower_case=x\n"),
        Case(
            name: "export prefix",
            text: "export A=1\nexport  B='x'\nexport\tC=\"y\"\nexport=3\nexport D\nexportE=5\n   export F=6\n"
        ),
        Case(
            name: "single quotes are raw",
            text: #"""
                A='raw \n \t $HOME'
                B='it\'s'
                C='a\\b'
                D='  keep  '
                E='multi
                line'
                F='has "double" inside'
                G='a'b
                """#),
        Case(
            name: "double quote escapes",
            text: #"""
                A="a\nb"
                B="tab\tx"
                C="q\"q"
                D="back\\slash"
                E="\a\b\f\r\v"
                F="unknown \x \u00e9 \0"
                G="it\'s"
                H="trailing backslash \\"
                I="a\\"
                J="x\\" y"
                """#),
        Case(name: "multi-line double quotes", text: "A=\"line1\nline2\n  line3\"\nB=after\nC=\"\n\"\n"),
        Case(
            name: "inline comments",
            text: """
                A=value # comment
                B=value#notcomment
                C=a#b
                D="quoted" # comment
                E='q' #c
                F="x #not"
                G= # only a comment
                H=#start
                I=x\t# tab comment
                J="y"# no space
                K=a  #  b # c
                L=url://x#frag y #real
                # M=commented out
                  # indented comment

                """),
        Case(
            name: "surrounding spaces",
            text: "  A  =  1  \n\tB\t=\t2\t\nC=   \nD =\n E=x y  z \nF   \n"),
        Case(name: "last duplicate wins", text: "A=1\nA=2\nB=x\nB\nC\nC=3\nD=1\nD=\n"),
        Case(
            name: "interpolation",
            text: #"""
                A=${HOME}
                B=${UNSET:-fallback}
                C=${A}/sub
                D='${A}'
                E="${B}"
                F=${NOPE}
                G=${A:x}
                H=${A-b}
                I=${}
                J=${A:-${B}}
                K=$A and $HOME
                L=${EMPTY:-d}
                M=${LATER}
                LATER=late
                N=${N}
                O=${PRESET}
                PRESET=file
                P=${PRESET}
                Q=${KEYONLY:-d}
                KEYONLY
                R=${A}${B}${C}
                S=${UNSET:-}
                T=${UNSET:-a b # c}
                U="${UNSET:-x}\n"
                V=${ with space }
                W=${ÜNÏ}
                """#,
            environment: ["HOME": "/home/test", "EMPTY": "", "PRESET": "env", "ÜNÏ": "code"]),
        Case(
            name: "CRLF line endings",
            text: "A=1\r\nB=\"x\r\ny\"\r\nC='p\r\nq'\r\nD=v # c\r\nE\r\nF=\"esc\\r\\n\"\r\n"),
        Case(name: "lone CR line endings", text: "A=1\rB=\"x\ry\"\rC=3\r"),
        Case(
            name: "unicode",
            text: "ÜNÏ=café ☕\nEMOJI=\"👩‍👩‍👧 e\u{301}\"\nA=日本語 # コメント\nB='Ωmega'\nC=a\u{A0}#b\nD=x\u{3000}#y\n"),
        Case(
            name: "lines that fail to parse",
            text: """
                GOOD=1
                this is bad
                A B=1
                =novalue
                'unterminated=1
                AFTER=2
                Q="x" junk
                R=1
                C="unterminated
                D=3
                'key
                E='v'
                F="a\\"b
                G=1
                """),
        Case(name: "unterminated quoted key", text: "'unterminated=1\nAFTER=2\nexport 'x\nB=3\n"),
        Case(name: "unterminated quoted values", text: "A='open\nB=2\nC=\"open\nD=4\n"),
        Case(name: "empty values", text: "A=\nB=''\nC=\"\"\nD= \nE=#\nF=\"\" # c\n"),
        Case(name: "keys without =", text: "A\nB # comment\nexport C\n  D  \nE=1\nE\n"),
        Case(
            name: "unusual keys",
            text: "a.b=1\nkebab-case=2\n'quoted key'=3\n'sp ace' = 4\n$X=5\nA:B=6\n'multi\nline'=7\n''=8\n"),
        Case(name: "blank lines and whitespace", text: "\n\n   \n\t\nA=1\n\n\u{0B}B=2\n\u{0C}C=3\n\n"),
        Case(name: "ASCII separator whitespace", text: "A=x\u{1C}#y\n\u{1D}B=2\nC\u{1F}=3\n"),
        Case(name: "no final newline", text: "A=1\nB=\"two\""),
        Case(name: "only comments", text: "# nothing here\n#A=1\n"),
        Case(name: "empty file", text: ""),
        Case(
            name: "realistic .env",
            text: """
                # Signing
                APPLE_TEAM_ID=ABCDE12345
                BUNDLE_ID=com.example.hadashboard
                ASC_KEY_PATH=~/keys/AuthKey_XYZ.p8
                HA_SERVER=http://homeassistant.local:8123 # LAN
                HA_TOKEN="eyJhbGciOiJIUzI1NiIs.eyJpc3MiOi#xyz"
                HA_DASHBOARD=wall-kitchen
                IPAD2_HOST=192.168.1.20
                IPAD2_SSH_PASSWORD='p@ss w0rd #1 \\ $HOME'
                DDI_DIR=${HOME}/DeviceSupport

                """,
            environment: ["HOME": "/Users/ci"]),
    ]

    /// python-dotenv's `dotenv_values(file)`, run with exactly `environment` (plus PATH).
    static func reference(_ file: URL, environment: [String: String]) async throws -> [String: Any] {
        let output = try await ReferenceTools.python(
            [
                ReferenceTools.repositoryRoot.appendingPathComponent("scripts/dotenv-reference.py").path,
                file.path,
            ],
            environment: environment)
        return try #require(try JSONSerialization.jsonObject(with: output.standardOutput) as? [String: Any])
    }

    @Test(arguments: corpus)
    func matchesPythonDotenv(_ sample: Case) async throws {
        let directory = try temporaryDirectory("dotenv")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(".env")
        try Data(sample.text.utf8).write(to: file)

        let reference = try await Self.reference(file, environment: sample.environment)
        var expected: [String: String] = [:]
        for (key, value) in reference {
            // python-dotenv gives None for a key without `=`; DotEnv.values omits such keys.
            if let value = value as? String { expected[key] = value }
        }

        var environment = sample.environment
        environment["PATH"] = "/usr/bin:/bin"
        let parsed = try DotEnv.load(from: file, environment: environment)
        #expect(parsed.values == expected)
        // Every key python-dotenv names (with or without a value) is a key of ours too.
        #expect(Set(parsed.keys) == Set(reference.keys))
    }

    /// A deliberate difference: a UTF-8 byte order mark (Windows editors) is not part of the first key.
    /// python-dotenv opens files as "utf-8", not "utf-8-sig", so its first key starts with U+FEFF.
    @Test func aByteOrderMarkIsNotPartOfTheFirstKey() async throws {
        let directory = try temporaryDirectory("dotenv-bom")
        defer { try? FileManager.default.removeItem(at: directory) }
        let withBOM = directory.appendingPathComponent("bom.env")
        let without = directory.appendingPathComponent("plain.env")
        try Data([0xEF, 0xBB, 0xBF] + Array("A=1\nB=2\n".utf8)).write(to: withBOM)
        try Data("A=1\nB=2\n".utf8).write(to: without)
        let pythonBOM = try await Self.reference(withBOM, environment: [:])
        #expect(pythonBOM["\u{FEFF}A"] as? String == "1")
        let pythonPlain = try await Self.reference(without, environment: [:])
        #expect(try DotEnv.load(from: withBOM).values == pythonPlain.compactMapValues { $0 as? String })
    }
}
