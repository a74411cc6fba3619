import Foundation

/// Turns an app's XcodeGen `project.yml` into `Templates/project.yml.mustache`: the values the old
/// `regen.sh` substituted from `.env` — the bundle id placeholder and `DEVELOPMENT_TEAM: ""` — become
/// `{{BUNDLE_ID}}` and `{{APPLE_TEAM_ID}}`; every other line stays as the project has it.
public struct XcodeGenTemplateMaker: Sendable {
    /// The placeholder regen.sh replaces with `BUNDLE_ID`.
    public static let placeholderBundleID = "com.example.hadashboard"

    public struct Template: Sendable {
        public var text: String
        /// The literal bundle id that became `{{BUNDLE_ID}}`, if any.
        public var bundleID: String?
        public var bundleIDUses: Int
        public var teamUses: Int
        /// The project's build configurations (XcodeGen's Debug and Release unless `configs:` says).
        public var configurations: [String]
    }

    public init() {}

    public func template(from spec: String) throws -> Template {
        let lines = spec.components(separatedBy: "\n")
        if let index = lines.firstIndex(where: { $0.contains("{{") }) {
            throw AdoptionError.mustacheInSpec(line: index + 1)
        }
        let bundleID =
            spec.contains(Self.placeholderBundleID)
            ? Self.placeholderBundleID : lines.lazy.compactMap(Self.bundleIdentifierValue).first
        var bundleUses = 0
        var teamUses = 0
        var output: [String] = [
            "# Made by `hadeploy init` from project.yml; `hadeploy render` writes Generated/project.yml.",
            "# The bundle id and team are Mustache variables (BUNDLE_ID, APPLE_TEAM_ID from .env).",
        ]
        for line in lines {
            if let team = Self.replacingTeam(line) {
                output.append(team)
                teamUses += 1
            } else if let bundleID, let replaced = Self.replacing(bundleID, in: line) {
                output.append(replaced)
                bundleUses += 1
            } else {
                output.append(line)
            }
        }
        return Template(
            text: output.joined(separator: "\n"), bundleID: bundleID, bundleIDUses: bundleUses,
            teamUses: teamUses, configurations: Self.configurations(lines))
    }

    /// `PRODUCT_BUNDLE_IDENTIFIER: com.x.app` → `com.x.app` (not a build-setting expression).
    static func bundleIdentifierValue(_ line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("PRODUCT_BUNDLE_IDENTIFIER:") else { return nil }
        let value = unquoted(valuePart(trimmed.dropFirst("PRODUCT_BUNDLE_IDENTIFIER:".count)))
        return value.isEmpty || value.contains("$") ? nil : value
    }

    /// A `key: value` line's value without a trailing comment.
    static func valuePart(_ text: Substring) -> String {
        var value = String(text)
        if let comment = value.range(of: " #") { value = String(value[..<comment.lowerBound]) }
        return value.trimmingCharacters(in: .whitespaces)
    }

    /// A value's trailing ` # comment`, with the spaces that align it.
    static func trailingComment(_ rest: Substring) -> String {
        guard let hash = rest.range(of: " #") else { return "" }
        var start = hash.lowerBound
        while start > rest.startIndex, rest[rest.index(before: start)] == " " {
            start = rest.index(before: start)
        }
        return String(rest[start...])
    }

    static func unquoted(_ text: String) -> String {
        for quote in ["\"", "'"] where text.count >= 2 && text.hasPrefix(quote) && text.hasSuffix(quote) {
            return String(text.dropFirst().dropLast())
        }
        return text
    }

    /// `DEVELOPMENT_TEAM: <anything>` → `DEVELOPMENT_TEAM: {{APPLE_TEAM_ID}}`, comment kept.
    static func replacingTeam(_ line: String) -> String? {
        guard let range = line.range(of: "DEVELOPMENT_TEAM:"),
            line[..<range.lowerBound].allSatisfy({ $0 == " " || $0 == "-" })
        else { return nil }
        return String(line[..<range.upperBound]) + " {{APPLE_TEAM_ID}}"
            + trailingComment(line[range.upperBound...])
    }

    /// The line with `bundleID` replaced: a whole value by `{{BUNDLE_ID}}` (YAML-escaped when
    /// rendered), a part of one (`<id>.tests`) by the raw `{{{BUNDLE_ID}}}`. Nil when absent.
    static func replacing(_ bundleID: String, in line: String) -> String? {
        guard line.contains(bundleID) else { return nil }
        if let colon = line.range(of: ": ") {
            let value = valuePart(line[colon.upperBound...])
            if unquoted(value) == bundleID {
                return String(line[..<colon.upperBound]) + "{{BUNDLE_ID}}"
                    + trailingComment(line[colon.upperBound...])
            }
        }
        var result = ""
        var rest = Substring(line)
        var replaced = false
        while let range = rest.range(of: bundleID) {
            let next = rest[range.upperBound...].first
            let partOfLongerName = next.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } ?? false
            result += rest[..<range.lowerBound]
            if partOfLongerName {
                result += bundleID
            } else {
                result += "{{{BUNDLE_ID}}}"
                replaced = true
            }
            rest = rest[range.upperBound...]
        }
        return replaced ? result + rest : nil
    }

    /// The names under a top-level `configs:`, or XcodeGen's own two.
    static func configurations(_ lines: [String]) -> [String] {
        guard let start = lines.firstIndex(where: { $0.hasPrefix("configs:") }) else {
            return ["Debug", "Release"]
        }
        var names: [String] = []
        var level: Int?
        for line in lines[(start + 1)...] {
            if line.trimmingCharacters(in: .whitespaces).isEmpty
                || line.trimmingCharacters(in: .whitespaces).hasPrefix("#")
            {
                continue
            }
            guard line.hasPrefix(" ") else { break }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // Only the first nesting level: `  Debug: debug`.
            let indent = line.prefix { $0 == " " }.count
            if level == nil { level = indent }
            guard indent == level else { continue }
            if let colon = trimmed.firstIndex(of: ":") { names.append(unquoted(String(trimmed[..<colon]))) }
        }
        return names.isEmpty ? ["Debug", "Release"] : names
    }
}
