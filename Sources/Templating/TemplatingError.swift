import HADeployCore

/// A key a template uses that neither `.env` nor the environment supplies, with every place it is used.
public struct MissingKey: Sendable, Hashable, Codable {
    public var key: String
    public var usedAt: [SourceLocation]
}

/// Why rendering templates failed.
public enum TemplatingError: Error, CustomStringConvertible, ExitStatusProviding {
    case missingKeys([MissingKey], envFile: String)
    case syntax(location: SourceLocation, message: String, line: String)
    case noTemplates(directory: String)
    case unreadableEnvFile(path: String, reason: String)
    case unreadableTemplate(path: String, reason: String)

    public var description: String {
        switch self {
        case .missingKeys(let keys, let envFile):
            var lines = [
                "\(keys.count) key(s) used by the templates are not set in \(envFile) or the environment:"
            ]
            for missing in keys {
                let places = missing.usedAt.map(\.description).joined(separator: ", ")
                lines.append("  \(missing.key)  (used at \(places))")
            }
            lines.append(
                "Add them to \(envFile) (see .env.example for what each one means) or export them.")
            return lines.joined(separator: "\n")
        case .syntax(let location, let message, let line):
            return "\(location): template syntax error: \(message)\n    \(line)"
        case .noTemplates(let directory):
            return "no *.mustache templates under \(directory)"
        case .unreadableEnvFile(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .unreadableTemplate(let path, let reason):
            return "cannot read template \(path): \(reason)"
        }
    }

    public var exitStatus: ExitStatus { .config }
}

extension TemplatingError: LocatedProblems {
    public var locatedProblems: [(location: SourceLocation, message: String)] {
        switch self {
        case .missingKeys(let keys, let envFile):
            return keys.flatMap { missing in
                missing.usedAt.map { ($0, "\(missing.key) is not set in \(envFile) or the environment") }
            }
        case .syntax(let location, let message, _):
            return [(location, "template syntax error: \(message)")]
        default:
            return []
        }
    }
}
