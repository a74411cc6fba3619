import Foundation
import HADeployCore
import Mustache

/// One rendered template, in memory.
public struct RenderedFile: Sendable, Hashable {
    /// Path relative to the output directory (template path without `.mustache`).
    public var relativePath: String
    public var contents: String
    public var template: String
}

/// Renders every `*.mustache` under a templates directory with a dictionary of values.
///
/// It never reads the environment: callers pass the merged `.env` + environment values in.
public struct TemplateRenderer: Sendable {
    public var templatesDirectory: URL
    /// How template paths appear in messages (relative to the working directory when possible).
    public var displayRoot: URL?
    public var fileSystem: any FileSystem

    public init(fileSystem: any FileSystem, templatesDirectory: URL, displayRoot: URL? = nil) {
        self.fileSystem = fileSystem
        self.templatesDirectory = templatesDirectory
        self.displayRoot = displayRoot
    }

    /// Template files, sorted, as paths relative to the templates directory.
    public func templatePaths() throws -> [String] {
        let root = templatesDirectory.standardizedFileURL
        guard let subpaths = try? fileSystem.subpathsOfDirectory(atPath: root.path) else {
            throw TemplatingError.noTemplates(directory: display(root))
        }
        let paths = subpaths.filter { $0.hasSuffix(".mustache") }
        guard !paths.isEmpty else { throw TemplatingError.noTemplates(directory: display(root)) }
        return paths.sorted()
    }

    /// Renders all templates. Throws one error listing every missing key, or the first syntax error.
    public func render(values: [String: String], envFileName: String = ".env") throws -> [RenderedFile] {
        _ = OutputFormat.registered
        var sources: [(path: String, text: String)] = []
        for path in try templatePaths() {
            let url = templatesDirectory.appendingPathComponent(path)
            guard let data = fileSystem.contents(atPath: url.path),
                let text = String(data: data, encoding: .utf8)
            else {
                throw TemplatingError.unreadableTemplate(path: display(url), reason: "not readable UTF-8")
            }
            sources.append((path, text))
        }

        // Parse everything first: a broken template is reported as broken (a typo like `{{NAME}`
        // would otherwise be scanned as a strange missing key).
        var compiled: [(path: String, template: MustacheTemplate)] = []
        for source in sources {
            let format = OutputFormat(fileName: String(source.path.dropLast(".mustache".count)))
            // On a line of its own the pragma is a standalone tag that Mustache removes, so it changes
            // neither the output nor the template's first line (which may be standalone itself).
            let pragma = "{{% CONTENT_TYPE: \(format.contentTypeName)}}\n"
            do {
                compiled.append((source.path, try MustacheTemplate(string: pragma + source.text)))
            } catch let error as MustacheTemplate.ParserError {
                let place = TemplateScanner.errorLocation(
                    for: error.error, line: error.context.lineNumber - 1, column: error.context.columnNumber,
                    in: source.text)
                let lines = source.text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
                throw TemplatingError.syntax(
                    location: SourceLocation(
                        file: display(templatesDirectory.appendingPathComponent(source.path)),
                        line: place.line, column: place.column),
                    message: Self.explain(error.error),
                    line: place.line <= lines.count ? String(lines[place.line - 1]) : "")
            }
            if let tag = TemplateScanner.scan(source.text).wholeContext.first {
                let lines = source.text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
                throw TemplatingError.syntax(
                    location: SourceLocation(
                        file: display(templatesDirectory.appendingPathComponent(source.path)),
                        line: tag.line, column: tag.column),
                    message: "a tag without a key name would insert every value, the environment and its "
                        + "secrets included; name a key, or write `{{! text }}` for a comment",
                    line: String(lines[tag.line - 1]))
            }
        }

        var missing: [String: [SourceLocation]] = [:]
        for source in sources {
            for reference in TemplateScanner.requiredKeys(in: source.text)
            where values[reference.key] == nil {
                missing[reference.key, default: []].append(
                    SourceLocation(
                        file: display(templatesDirectory.appendingPathComponent(source.path)),
                        line: reference.line, column: reference.column))
            }
        }
        if !missing.isEmpty {
            let keys = missing.keys.sorted().map { MissingKey(key: $0, usedAt: missing[$0]!) }
            throw TemplatingError.missingKeys(keys, envFile: envFileName)
        }

        return compiled.map { source in
            RenderedFile(
                relativePath: String(source.path.dropLast(".mustache".count)),
                contents: source.template.render(values), template: source.path)
        }
    }

    static func explain(_ error: any Error) -> String {
        guard let error = error as? MustacheTemplate.Error else { return "\(error)" }
        switch error {
        case .sectionCloseNameIncorrect: return "a section is closed with a different name than it was opened"
        case .unfinishedName: return "a tag is not closed (missing `}}`)"
        case .expectedSectionEnd: return "a section is opened but never closed (missing `{{/NAME}}`)"
        case .invalidSetDelimiter: return "malformed set-delimiter tag"
        case .transformAppliedToInheritanceSection: return "a transform cannot apply to an inherited section"
        case .illegalTokenInsideInheritSection: return "illegal tag inside an inherited section"
        case .textInsideInheritSection: return "text inside an inherited section"
        case .invalidConfigVariableSyntax: return "malformed pragma tag"
        case .unrecognisedConfigVariable: return "unknown pragma"
        }
    }

    func display(_ url: URL) -> String {
        let path = url.standardizedFileURL.path
        if let root = displayRoot?.standardizedFileURL.path, path.hasPrefix(root + "/") {
            return String(path.dropFirst(root.count + 1))
        }
        return path
    }
}
