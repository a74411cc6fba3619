import Foundation
import Mustache
import Yams

/// How `{{VAR}}` is escaped, chosen from the output file's extension.
public enum OutputFormat: String, Sendable, Codable {
    /// `.yml`/`.yaml`: each value becomes a YAML scalar that parses back to exactly that string.
    case yaml
    /// `.plist`/`.xml`: XML character escaping.
    case xml
    /// Anything else: inserted as is.
    case text

    public init(fileName: String) {
        switch (fileName as NSString).pathExtension.lowercased() {
        case "yml", "yaml": self = .yaml
        case "plist", "xml", "entitlements", "xcscheme": self = .xml
        default: self = .text
        }
    }

    var contentTypeName: String {
        switch self {
        case .yaml: return "HADEPLOY_YAML"
        case .xml: return "HADEPLOY_XML"
        case .text: return "TEXT"
        }
    }

    /// Registers the escapers with swift-mustache once per process.
    static let registered: Bool = {
        MustacheContentTypes.register(YAMLScalarContentType(), named: OutputFormat.yaml.contentTypeName)
        MustacheContentTypes.register(XMLContentType(), named: OutputFormat.xml.contentTypeName)
        return true
    }()
}

/// Emits a plain scalar when that reads back as the same string, a double-quoted one otherwise.
struct YAMLScalarContentType: MustacheContentType {
    func escapeText(_ text: String) -> String {
        YAMLScalar.encode(text)
    }
}

struct XMLContentType: MustacheContentType {
    func escapeText(_ text: String) -> String {
        XMLText.escape(text)
    }
}

/// XML character escaping, shared by templates and reports.
public enum XMLText {
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            // XML parsers turn a raw CR (and CRLF) into LF; a character reference survives.
            case "\r": result += "&#13;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

/// YAML scalar encoding for template values.
public enum YAMLScalar {
    /// `text` as a YAML scalar that a YAML parser reads back as exactly `text`, as a string.
    public static func encode(_ text: String) -> String {
        if isSafePlain(text) { return text }
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            // YAML's printable set excludes C0/C1 controls (NEL aside, which parsers fold as a line
            // break), U+FFFE and U+FFFF; libyaml and PyYAML reject them raw, so escape them all.
            case "\u{00}"..."\u{1F}", "\u{7F}"..."\u{9F}", "\u{2028}", "\u{2029}", "\u{FEFF}",
                "\u{FFFE}", "\u{FFFF}":
                result += String(format: "\\u%04X", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// Conservative: letters, digits and `._/-` only, not starting with a YAML indicator, and
    /// resolved by a YAML parser as this very string (not a number, boolean, null or date).
    static func isSafePlain(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.count <= 200 else { return false }
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "._/-"))
        guard text.unicodeScalars.allSatisfy({ $0.isASCII && allowed.contains($0) }) else { return false }
        guard CharacterSet.letters.contains(first) || first == "_" || first == "/" else { return false }
        guard let parsed = try? Yams.load(yaml: "k: \(text)") as? [String: Any] else { return false }
        return (parsed["k"] as? String) == text
    }
}
