import Foundation
import HADeployCore
import Testing

/// Issue 25: text from outside (a Home Assistant error, an artifact name) printed as it came could
/// clear the terminal, retitle it, hide text behind a CR, or become a GitHub annotation.
struct PrintableTextTests {
    @Test func controlCharactersBecomeVisible() {
        #expect(PrintableText.neutralised("\u{1B}[31mred\u{1B}[0m") == "\\u001B[31mred\\u001B[0m")
        #expect(PrintableText.neutralised("a\rb") == "a\\rb")
        #expect(PrintableText.neutralised("bell\u{07}") == "bell\\u0007")
        #expect(PrintableText.neutralised("csi\u{9B}2J") == "csi\\u009B2J")
        #expect(PrintableText.neutralised("rtl\u{202E}txt") == "rtl\\u202Etxt")
        #expect(PrintableText.neutralised("nul\u{0}") == "nul\\u0000")
    }

    @Test func workflowCommandsAtALineStartAreNeutralised() {
        #expect(PrintableText.neutralised("::error::x") == "\\::error::x")
        #expect(
            PrintableText.neutralised("ok\n  ::add-mask::s\n##[error]y")
                == "ok\n  \\::add-mask::s\n\\##[error]y")
        #expect(PrintableText.neutralised("\t::warning::w") == "\t\\::warning::w")
        // Not at a line start, or not a command: unchanged.
        #expect(PrintableText.neutralised("see ::error::x") == "see ::error::x")
        #expect(PrintableText.neutralised(": one colon\n# a heading") == ": one colon\n# a heading")
    }

    @Test func ordinaryTextIsUnchanged() {
        for text in [
            "", "plain", "two\nlines\n", "\ttabbed", "ümlaut — dash … ellipsis ✔", "  indented\n",
            "report: out/index.html",
        ] {
            #expect(PrintableText.neutralised(text) == text)
        }
    }

    @Test func sinksNeutraliseTextButNotTheirOwnControlSequences() {
        let sink = RecordingOutputSink()
        sink.write("\u{1B}]0;title\u{07}\n::error::x\n", to: .standardError)
        sink.writeControl("\u{1B}[2A::error title=hadeploy::ours\n", to: .standardError)
        #expect(
            sink.standardError
                == "\\u001B]0;title\\u0007\n\\::error::x\n\u{1B}[2A::error title=hadeploy::ours\n")
    }
}
