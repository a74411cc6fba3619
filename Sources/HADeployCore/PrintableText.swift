/// Text from outside hadeploy (a Home Assistant error, an artifact or device name, a peer tool's
/// words) made safe to print on a terminal or into a CI log.
///
/// Every control character except newline and tab is shown as an escape (`ESC` becomes `\u001B`,
/// CR `\r`), so a message can neither move the cursor, recolour or retitle the terminal, nor hide
/// text behind a carriage return; bidirectional overrides are shown the same way. A line that would
/// start (after its indentation) with a GitHub Actions workflow command (`::error …`, the older
/// `##[…]`) gets a `\` in front, so the runner never takes it for a command. The standard output
/// sinks and the log handler apply this to everything they write; hadeploy's own terminal control
/// sequences and annotations go through ``OutputSink/writeControl(_:to:)`` instead.
public enum PrintableText {
    public static func neutralised(_ text: String) -> String {
        guard needsWork(text) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        var lineStart = true
        var pendingIndent = ""
        for scalar in text.unicodeScalars {
            if lineStart {
                if scalar == " " || scalar == "\t" {
                    pendingIndent.unicodeScalars.append(scalar)
                    continue
                }
                lineStart = false
                result += pendingIndent
                pendingIndent = ""
                if scalar == ":" || scalar == "#" {
                    // Decided below, once the line's first characters are known.
                    result += "\u{0}"
                }
            }
            if scalar == "\n" {
                result += "\n"
                lineStart = true
                continue
            }
            result += visible(scalar)
        }
        result += pendingIndent
        return markCommands(result)
    }

    /// Whether the text has anything `neutralised` would change (most text has not).
    static func needsWork(_ text: String) -> Bool {
        var lineStart = true
        for scalar in text.unicodeScalars {
            if lineStart, scalar == ":" || scalar == "#" { return true }
            if scalar == "\n" {
                lineStart = true
                continue
            }
            if lineStart, scalar == " " || scalar == "\t" { continue }
            lineStart = false
            if isControl(scalar) { return true }
        }
        return false
    }

    /// The candidates marked with NUL (which `visible` never leaves in the text): a `\` where a
    /// workflow command would start, nothing otherwise.
    private static func markCommands(_ text: String) -> String {
        guard text.contains("\u{0}") else { return text }
        var output = ""
        var rest = Substring(text)
        while let mark = rest.firstIndex(of: "\u{0}") {
            output += rest[..<mark]
            rest = rest[rest.index(after: mark)...]
            if rest.hasPrefix("::") || rest.hasPrefix("##[") { output += "\\" }
        }
        output += rest
        return output
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A: return false
        case 0x00...0x1F, 0x7F...0x9F: return true
        // Line and paragraph separators; bidirectional marks, embeddings, overrides and isolates.
        case 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func visible(_ scalar: Unicode.Scalar) -> String {
        guard isControl(scalar) else { return String(scalar) }
        switch scalar {
        case "\r": return "\\r"
        default:
            // `\u001B`: readable, and a valid escape inside a JSON string (what `--json` prints).
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
    }
}
