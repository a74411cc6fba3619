import HADeployCore
import Mustache

/// Finds the variables a Mustache template needs, with their positions, so that every missing key
/// can be reported at once before anything is rendered (Mustache itself renders a missing key as "").
///
/// Only top-level variables are required: a variable inside a section may be resolved by the
/// section's own context, and `{{^KEY}}fallback{{/KEY}}` is the way to make a key optional.
enum TemplateScanner {
    struct Reference: Hashable {
        var key: String
        var line: Int
        var column: Int
    }

    static func requiredKeys(in text: String) -> [Reference] {
        scan(text).references
    }

    /// Where to point the user for a syntax error Mustache noticed at `line`:`column` (1-based): the
    /// opening delimiter of the broken tag, or for a section that is never closed, its opening tag
    /// (Mustache itself notices those only at the end of the file).
    static func errorLocation(for error: any Error, line: Int, column: Int, in text: String) -> (
        line: Int, column: Int
    ) {
        if let error = error as? MustacheTemplate.Error, case .expectedSectionEnd = error,
            let section = scan(text).unclosedSections.last
        {
            return (section.line, section.column)
        }
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        guard line >= 1, line <= lines.count else { return (line, column) }
        let lineText = lines[line - 1]
        let offset =
            lineText.index(
                lineText.startIndex, offsetBy: column - 1, limitedBy: lineText.endIndex) ?? lineText.endIndex
        guard var open = text[..<offset].range(of: "{{", options: .backwards)?.lowerBound else {
            return (line, column)
        }
        while open > text.startIndex, text[text.index(before: open)] == "{" {
            open = text.index(before: open)
        }
        let before = text[..<open]
        let openLine = before.filter(\.isNewline).count + 1
        let lineStart = before.lastIndex(where: \.isNewline).map { text.index(after: $0) } ?? text.startIndex
        return (openLine, text.distance(from: lineStart, to: open) + 1)
    }

    /// `wholeContext`: top-level `{{ }}` / `{{.}}` tags, which Mustache renders as the entire value
    /// dictionary (every environment variable, secrets included).
    static func scan(_ text: String) -> (
        references: [Reference], unclosedSections: [Reference], wholeContext: [Reference]
    ) {
        var references: [Reference] = []
        var sections: [Reference] = []
        var depth = 0
        var open = "{{"
        var close = "}}"
        var line = 1
        var column = 1
        var index = text.startIndex

        func step(_ character: Character) {
            // "\r\n" is one Character; counted as Mustache and editors count lines.
            if character.isNewline {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }

        while index < text.endIndex {
            guard text[index...].hasPrefix(open) else {
                step(text[index])
                index = text.index(after: index)
                continue
            }
            let tagLine = line
            let tagColumn = column
            var cursor = text.index(index, offsetBy: open.count)
            var tripleMustache = false
            if open == "{{", cursor < text.endIndex, text[cursor] == "{" {
                tripleMustache = true
                cursor = text.index(after: cursor)
            }
            let terminator = tripleMustache ? "}" + close : close
            guard let end = text[cursor...].range(of: terminator) else { break }
            let body = text[cursor..<end.lowerBound].trimmingCharacters(in: .whitespaces)
            for character in text[index..<end.upperBound] { step(character) }
            index = end.upperBound

            let sigil = body.first
            let name = String(body.dropFirst()).trimmingCharacters(in: .whitespaces)
            switch sigil {
            case "#", "^", "$", "<":
                depth += 1
                sections.append(Reference(key: name, line: tagLine, column: tagColumn))
            case "/":
                depth = max(0, depth - 1)
                _ = sections.popLast()
            case "!", ">", "%":
                continue
            case "=":
                // {{=<% %>=}} changes the delimiters for the rest of the template.
                let spec = body.dropFirst().dropLast().split(separator: " ")
                if spec.count == 2 {
                    open = String(spec[0])
                    close = String(spec[1])
                }
            case "&":
                if depth == 0 { references.append(reference(name, tagLine, tagColumn)) }
            default:
                if depth == 0 {
                    references.append(reference(tripleMustache ? body : String(body), tagLine, tagColumn))
                }
            }
        }
        let isWholeContext = { (reference: Reference) in reference.key == "." || reference.key.isEmpty }
        return (
            references.filter { !isWholeContext($0) }, sections, references.filter(isWholeContext)
        )
    }

    private static func reference(_ name: String, _ line: Int, _ column: Int) -> Reference {
        // `a.b` needs `a`; transforms like `uppercased(NAME)` need NAME.
        var key = name
        if let open = key.firstIndex(of: "("), key.hasSuffix(")") {
            key = String(key[key.index(after: open)..<key.index(before: key.endIndex)])
        }
        if let dot = key.firstIndex(of: "."), dot != key.startIndex {
            key = String(key[..<dot])
        }
        return Reference(key: key, line: line, column: column)
    }
}
