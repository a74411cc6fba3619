import HADeployCore
import Yams

/// Reads a YAML mapping node key by key, recording every problem (with its position) instead of
/// stopping at the first, and flagging keys it does not know with a "did you mean" suggestion.
final class NodeReader {
    let file: String
    private(set) var problems: [SpecProblem] = []

    init(file: String) { self.file = file }

    func location(_ node: Node?) -> SourceLocation {
        guard let mark = node?.mark else { return SourceLocation(file: file, line: 1, column: 1) }
        return SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    func problem(_ node: Node?, _ message: String) {
        problems.append(SpecProblem(location(node), message))
    }

    /// A mapping's entries by key name.
    typealias Entries = [String: (key: Node, value: Node)]

    /// The mapping's entries, after checking every key against `allowed`.
    func entries(_ node: Node, allowed: [String], context: String) -> Entries {
        guard case .mapping(let mapping) = node else {
            problem(node, "\(context) must be a mapping of keys to values")
            return [:]
        }
        var result: Entries = [:]
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key else {
                problem(key, "\(context): keys must be plain names")
                continue
            }
            let name = scalar.string
            if result[name] != nil {
                problem(key, "\(context): key '\(name)' appears twice")
            }
            if !allowed.isEmpty && !allowed.contains(name) {
                var message = "\(context): unknown key '\(name)'"
                if let suggestion = Suggestion.closest(to: name, in: allowed) {
                    message += " (did you mean '\(suggestion)'?)"
                } else {
                    message += " (known keys: \(allowed.joined(separator: ", ")))"
                }
                problem(key, message)
                continue
            }
            result[name] = (key, value)
        }
        return result
    }

    func string(_ node: Node?, _ what: String) -> String? {
        guard let node else { return nil }
        guard case .scalar(let scalar) = node else {
            problem(node, "\(what) must be a single value, not a list or mapping")
            return nil
        }
        return scalar.string
    }

    func bool(_ node: Node?, _ what: String) -> Bool? {
        guard let node, let text = string(node, what) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            problem(node, "\(what) must be true or false, not '\(text)'")
            return nil
        }
    }

    static let shortestSeconds = DeadlineLimits.shortestSeconds
    static let longestSeconds = DeadlineLimits.longestSeconds

    func number(_ node: Node?, _ what: String) -> Double? {
        guard let node, let text = string(node, what) else { return nil }
        guard let value = Double(text), value > 0, value.isFinite else {
            problem(node, "\(what) must be a positive number of seconds, not '\(text)'")
            return nil
        }
        // Deadlines become whole milliseconds and `Duration`s: a bound keeps them meaningful.
        guard (Self.shortestSeconds...Self.longestSeconds).contains(value) else {
            problem(
                node,
                "\(what) must be between \(Self.shortestSeconds) s and \(Int(Self.longestSeconds)) s (a week), "
                    + "not '\(text)'")
            return nil
        }
        return value
    }

    func integer(_ node: Node?, _ what: String, range: ClosedRange<Int>) -> Int? {
        guard let node, let text = string(node, what) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            problem(node, "\(what) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return value
    }

    func strings(_ node: Node?, _ what: String) -> [String]? {
        guard let node else { return nil }
        switch node {
        case .scalar(let scalar):
            return [scalar.string]
        case .sequence(let sequence):
            var values: [String] = []
            for item in sequence {
                if let value = string(item, "each entry of \(what)") { values.append(value) }
            }
            return values
        default:
            problem(node, "\(what) must be a list")
            return nil
        }
    }

    func stringMap(_ node: Node?, _ what: String) -> [String: String]? {
        guard let node else { return nil }
        var result: [String: String] = [:]
        for (name, entry) in entries(node, allowed: [], context: what) {
            if let value = string(entry.value, "\(what).\(name)") { result[name] = value }
        }
        return result
    }

    func choice<T: RawRepresentable & CaseIterable>(_ node: Node?, _ what: String, as type: T.Type) -> T?
    where T.RawValue == String {
        guard let node, let text = string(node, what) else { return nil }
        if let value = T(rawValue: text) { return value }
        let options = T.allCases.map(\.rawValue)
        var message = "\(what) '\(text)' is not one of \(options.joined(separator: ", "))"
        if let suggestion = Suggestion.closest(to: text, in: options) {
            message += " (did you mean '\(suggestion)'?)"
        }
        problem(node, message)
        return nil
    }
}

extension NodeReader {
    /// A `transport:` word `vocabulary` knows, or nil with the problem (and the closest word).
    func word(_ node: Node?, _ what: String, in vocabulary: TransportVocabulary) -> TransportWord? {
        guard let node, let text = string(node, what) else { return nil }
        if let word = vocabulary.word(Transport(rawValue: text)) { return word }
        var message = "\(what) '\(text)' is not one of \(vocabulary.names.joined(separator: ", "))"
        if let suggestion = Suggestion.closest(to: text, in: vocabulary.names) {
            message += " (did you mean '\(suggestion)'?)"
        }
        problem(node, message)
        return nil
    }
}

/// The deadlines devices.yaml accepts (`timeouts:`, `verification_timeout:`): a plan file's are held to
/// the same bounds (`DeployPlan.fileProblems`).
public enum DeadlineLimits {
    public static let shortestSeconds = 0.001
    /// A week: deadlines become whole milliseconds and `Duration`s, and a bound keeps them meaningful.
    public static let longestSeconds: Double = 7 * 24 * 3600

    /// Whether `seconds` is a deadline devices.yaml would accept.
    public static func accepts(_ seconds: Double) -> Bool {
        seconds.isFinite && (shortestSeconds...longestSeconds).contains(seconds)
    }
}
