import Foundation
import HADeployCore

/// A parsed `.env` file.
///
/// The grammar follows what python-dotenv 1.x implements (and is tested against it): optional
/// `export`, single quotes with only `\'` and `\\` unescaped, double quotes with `\n \t \" \\ ...`
/// escapes and multi-line values, `#` comments outside quotes only after whitespace, trimmed unquoted
/// values, last duplicate wins, and `${VAR}` / `${VAR:-default}` expansion from earlier keys and the
/// environment. A line it cannot parse is skipped with a warning naming the line, as python-dotenv does.
public struct DotEnv: Sendable {
    /// Keys in file order with their final values (a key written without `=` has no value).
    public private(set) var values: [String: String]
    /// Keys in the order they first appear.
    public private(set) var keys: [String]
    /// Where each key was last assigned.
    public private(set) var locations: [String: SourceLocation]
    /// Lines that could not be parsed.
    public private(set) var warnings: [String]

    public init() {
        values = [:]
        keys = []
        locations = [:]
        warnings = []
    }

    /// Parses `text`; `environment` is only used for `${VAR}` expansion (file values take precedence,
    /// as `dotenv_values` does).
    /// Expanded values are capped (`maximumValueLength` each, `maximumTotalLength` together): a
    /// few lines of `B2=${B1}${B1}` double a value per line and would otherwise exhaust memory.
    public init(parsing text: String, file: String = ".env", environment: [String: String] = [:]) throws {
        self.init()
        var reader = DotEnvReader(text)
        var raw: [(String, String?, Int)] = []
        while reader.hasMore {
            // Blank lines belong to no statement: a line number names where the statement starts.
            reader.skipWhitespace()
            guard reader.hasMore else { break }
            let startLine = reader.line
            switch reader.binding() {
            case .blank:
                continue
            case .binding(let key, let value):
                raw.append((key, value, startLine))
            case .error:
                warnings.append("\(file):\(startLine): could not parse this line; it was ignored")
            }
        }
        // Interpolation sees the environment first, then keys already resolved from the file.
        var resolved: [String: String?] = [:]
        var seen: Set<String> = []
        var total = 0
        for (key, value, line) in raw {
            var result: String?
            if let value {
                let budget = min(Self.maximumValueLength, Self.maximumTotalLength - total)
                result = DotEnv.expand(value, limit: budget) { name in
                    if let fileValue = resolved[name] { return fileValue ?? "" }
                    return environment[name]
                }
                guard let expanded = result else {
                    throw TemplatingError.envValueTooLarge(
                        location: SourceLocation(file: file, line: line), key: key,
                        limit: budget == Self.maximumValueLength ? budget : Self.maximumTotalLength,
                        total: budget != Self.maximumValueLength)
                }
                total += expanded.utf8.count
            }
            resolved[key] = .some(result)
            if seen.insert(key).inserted { keys.append(key) }
            locations[key] = SourceLocation(file: file, line: line)
            if let result { values[key] = result } else { values.removeValue(forKey: key) }
        }
    }

    /// One expanded value may be this long (UTF-8 bytes): far above any token or URL.
    public static let maximumValueLength = 1024 * 1024
    /// All expanded values together.
    public static let maximumTotalLength = 32 * 1024 * 1024

    /// Reads and parses a file; a missing file is an empty `.env`. Anything else that is not a
    /// regular UTF-8 file of sane size (a directory, a FIFO, `/dev/zero`) is a configuration error.
    public static func load(from url: URL, environment: [String: String] = [:], displayName: String? = nil)
        throws -> DotEnv
    {
        let reader = TextFileReader()
        guard reader.exists(url.path) else { return DotEnv() }
        let name = displayName ?? url.path
        let text = try reader.read(url.path, displayName: name)
        return try DotEnv(parsing: text, file: name, environment: environment)
    }

    /// `${NAME}` and `${NAME:-default}`; an unknown name without default expands to "". Nil when the
    /// result would be longer than `limit` UTF-8 bytes.
    static func expand(_ value: String, limit: Int = .max, lookup: (String) -> String?) -> String? {
        guard value.contains("${") else { return value.utf8.count <= limit ? value : nil }
        var output = ""
        var length = 0
        var index = value.startIndex
        // The first `}` at or after the last search stays the first one until `index` passes it, and
        // once none is found none ever will be: a long run of `${:${:${...` stays linear.
        var nextClose: String.Index? = value.firstIndex(of: "}")
        while index < value.endIndex {
            guard length <= limit else { return nil }
            if let found = nextClose, found < index {
                nextClose = value[index...].firstIndex(of: "}")
            }
            if value[index...].hasPrefix("${"), let close = nextClose {
                let inner = value[value.index(index, offsetBy: 2)..<close]
                let name: Substring
                var fallback: Substring?
                if let colon = inner.firstIndex(of: ":") {
                    let after = inner[colon...]
                    guard after.hasPrefix(":-") else {
                        // python-dotenv's pattern does not match `${A:x}`: it stays literal.
                        length += value[index].utf8.count
                        output.append(value[index])
                        index = value.index(after: index)
                        continue
                    }
                    name = inner[..<colon]
                    fallback = after.dropFirst(2)
                } else {
                    name = inner
                }
                let piece = lookup(String(name)) ?? String(fallback ?? "")
                length += piece.utf8.count
                guard length <= limit else { return nil }
                output += piece
                index = value.index(after: close)
            } else {
                length += value[index].utf8.count
                output.append(value[index])
                index = value.index(after: index)
            }
        }
        return length <= limit ? output : nil
    }
}

/// Character-level reader implementing the dotenv grammar.
struct DotEnvReader {
    enum Result {
        case blank
        case binding(key: String, value: String?)
        case error
    }

    private let scalars: [Unicode.Scalar]
    private var position = 0
    private(set) var line = 1
    /// Per quote character, the last scan that found no closing quote.
    private var unterminated: [Unicode.Scalar: (start: Int, lastEscapedQuote: Int?)] = [:]

    init(_ text: String) {
        // python-dotenv reads the file in text mode, whose universal newlines turn CRLF and a lone CR
        // into LF before parsing: a quoted multi-line value from a CRLF file holds LF only.
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.unicodeScalars.count)
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" && previousWasCR {
                previousWasCR = false
                continue
            }
            previousWasCR = scalar == "\r"
            scalars.append(previousWasCR ? "\n" : scalar)
        }
        self.scalars = scalars
    }

    mutating func skipWhitespace() {
        while let s = peek(), Self.isSpace(s) { advance() }
    }

    var hasMore: Bool { position < scalars.count }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        position + offset < scalars.count ? scalars[position + offset] : nil
    }

    private mutating func advance() {
        let scalar = scalars[position]
        position += 1
        if scalar == "\n" || (scalar == "\r" && peek() != "\n") { line += 1 }
    }

    private static func isLineBreak(_ s: Unicode.Scalar) -> Bool { s == "\n" || s == "\r" }
    /// Python's `\s` (`str.isspace`): Unicode White_Space plus the ASCII separators U+001C...U+001F.
    private static func isSpace(_ s: Unicode.Scalar) -> Bool {
        s.properties.isWhitespace || (0x1C...0x1F).contains(s.value)
    }
    private static func isInlineSpace(_ s: Unicode.Scalar) -> Bool {
        isSpace(s) && !isLineBreak(s)
    }

    mutating func binding() -> Result {
        while let s = peek(), Self.isSpace(s) { advance() }
        guard hasMore else { return .blank }
        let mark = position
        // `export` followed by inline whitespace.
        if matches("export"), let s = peek(6), Self.isInlineSpace(s) {
            for _ in 0..<6 { advance() }
            while let s = peek(), Self.isInlineSpace(s) { advance() }
        }
        _ = mark
        var key: String?
        if peek() == "#" {
            key = nil
        } else if peek() == "'" {
            let start = (position, line)
            advance()
            var text = ""
            while let s = peek(), s != "'" {
                text.unicodeScalars.append(s)
                advance()
            }
            guard peek() == "'", !text.isEmpty else {
                // python-dotenv's key pattern fails at the opening quote, so only that line is skipped.
                (position, line) = start
                return skipLine()
            }
            advance()
            key = text
        } else {
            var text = ""
            while let s = peek(), s != "=", s != "#", !Self.isSpace(s) {
                text.unicodeScalars.append(s)
                advance()
            }
            guard !text.isEmpty else { return skipLine() }
            key = text
        }
        while let s = peek(), Self.isInlineSpace(s) { advance() }
        var value: String?
        if key != nil, peek() == "=" {
            advance()
            while let s = peek(), Self.isInlineSpace(s) { advance() }
            guard let parsed = parseValue() else { return skipLine() }
            value = parsed
        }
        // Optional comment, then end of line.
        while let s = peek(), Self.isInlineSpace(s) { advance() }
        if peek() == "#" {
            while let s = peek(), !Self.isLineBreak(s) { advance() }
        }
        guard endOfLine() else { return skipLine() }
        guard let key else { return .blank }
        return .binding(key: key, value: value)
    }

    private func matches(_ word: String) -> Bool {
        for (offset, scalar) in word.unicodeScalars.enumerated() where peek(offset) != scalar {
            return false
        }
        return true
    }

    private mutating func endOfLine() -> Bool {
        while let s = peek(), Self.isInlineSpace(s) { advance() }
        guard let s = peek() else { return true }
        guard Self.isLineBreak(s) else { return false }
        if s == "\r", peek(1) == "\n" { advance() }
        advance()
        return true
    }

    private mutating func skipLine() -> Result {
        while let s = peek(), !Self.isLineBreak(s) { advance() }
        if peek() == "\r", peek(1) == "\n" { advance() }
        if hasMore { advance() }
        return .error
    }

    private mutating func parseValue() -> String? {
        switch peek() {
        case "'":
            return quoted(by: "'", escapes: ["\\": "\\", "'": "'"])
        case "\"":
            return quoted(
                by: "\"",
                escapes: [
                    "\\": "\\", "'": "'", "\"": "\"", "a": "\u{07}", "b": "\u{08}", "f": "\u{0C}",
                    "n": "\n", "r": "\r", "t": "\t", "v": "\u{0B}",
                ])
        case nil, "\n", "\r":
            return ""
        default:
            var text = ""
            while let s = peek(), !Self.isLineBreak(s) {
                text.unicodeScalars.append(s)
                advance()
            }
            // A comment starts at a `#` preceded by whitespace; `a#b` keeps its `#`.
            let chars = Array(text.unicodeScalars)
            var cut = chars.count
            var i = 0
            while i < chars.count {
                if Self.isSpace(chars[i]) {
                    var j = i
                    while j < chars.count, Self.isSpace(chars[j]) { j += 1 }
                    if j < chars.count, chars[j] == "#" {
                        cut = i
                        break
                    }
                    i = j
                } else {
                    i += 1
                }
            }
            var result = String(String.UnicodeScalarView(chars[..<cut]))
            while let last = result.unicodeScalars.last, Self.isSpace(last) {
                result.unicodeScalars.removeLast()
            }
            return result
        }
    }

    /// A quoted value, matched the way python-dotenv's greedy regex does: the content may hold a
    /// quote only right after a backslash; it ends at the first quote without one, or, when the text
    /// runs out first, at the last backslash-quote seen (the regex backtracks to it).
    private mutating func quoted(by quote: Unicode.Scalar, escapes: [Unicode.Scalar: Unicode.Scalar])
        -> String?
    {
        let open = position
        var index = open + 1
        var lastEscapedQuote: Int?
        var close: Int?
        // A scan that found no closing quote proves every quote after its start is escaped, so a
        // later opening quote of the same kind can find none either: answered without rescanning
        // (many unterminated quotes would otherwise make parsing quadratic).
        if let failed = unterminated[quote], failed.start < open {
            guard let last = failed.lastEscapedQuote, last >= open + 2 else { return nil }
            index = scalars.count
            lastEscapedQuote = last
        }
        while index < scalars.count {
            if scalars[index] == quote {
                if scalars[index - 1] == "\\" && index - 1 > open {
                    lastEscapedQuote = index
                } else {
                    close = index
                    break
                }
            }
            index += 1
        }
        if close == nil { unterminated[quote] = (open, lastEscapedQuote) }
        guard let end = close ?? lastEscapedQuote else { return nil }
        let raw = Array(scalars[(open + 1)..<end])
        while position <= end { advance() }
        var result = ""
        var i = 0
        while i < raw.count {
            if raw[i] == "\\", i + 1 < raw.count, let decoded = escapes[raw[i + 1]] {
                result.unicodeScalars.append(decoded)
                i += 2
            } else {
                result.unicodeScalars.append(raw[i])
                i += 1
            }
        }
        return result
    }
}
