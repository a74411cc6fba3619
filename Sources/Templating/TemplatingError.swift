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
    /// `${...}` expansion made a value (or all values together) longer than the cap.
    case envValueTooLarge(location: SourceLocation, key: String, limit: Int, total: Bool)

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
        case .envValueTooLarge(let location, let key, let limit, let total):
            return "\(location): error: " + Self.tooLargeMessage(key: key, limit: limit, total: total)
        }
    }

    public var exitStatus: ExitStatus { .config }

    static func tooLargeMessage(key: String, limit: Int, total: Bool) -> String {
        let what = total ? "makes the expanded values together longer than" : "expands to more than"
        return "\(key) \(what) \(limit / 1024 / 1024) MiB (each ${...} repeats a value: "
            + "is a variable expanding itself over and over?)"
    }
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
        case .envValueTooLarge(let location, let key, let limit, let total):
            return [(location, Self.tooLargeMessage(key: key, limit: limit, total: total))]
        default:
            return []
        }
    }
}
