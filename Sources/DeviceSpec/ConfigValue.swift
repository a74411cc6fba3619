/// A devices.yaml string that may reference `.env`/environment variables as `${NAME}` or
/// `${NAME:-default}`. It stays unresolved in the model; the step that needs it resolves it.
public struct ConfigValue: Sendable, Hashable, Codable, CustomStringConvertible {
    public var raw: String

    public init(_ raw: String) { self.raw = raw }

    /// A value from `.env` or the environment, or the names it still needs. Plans carry this type
    /// (never a `<unset: KEY>` string); it prints as the value or `<unset: KEY>`.
    public enum Resolution: Sendable, Hashable, Codable, CustomStringConvertible {
        case value(String)
        /// Names of the variables that are not set (and have no default).
        case unset([String])

        /// The value, or nil while something is unset.
        public var value: String? {
            if case .value(let text) = self { return text }
            return nil
        }

        public var unsetNames: [String] {
            if case .unset(let names) = self { return names }
            return []
        }

        public var description: String {
            switch self {
            case .value(let text): return text
            case .unset(let names): return "<unset: \(names.joined(separator: ", "))>"
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }

        /// Read back from a plan file: `<unset: A, B>` is the unset form, anything else a value.
        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            if text.hasPrefix("<unset: "), text.hasSuffix(">") {
                let names = text.dropFirst("<unset: ".count).dropLast()
                self = .unset(names.split(separator: ",").map { String($0.drop { $0 == " " }) })
            } else {
                self = .value(text)
            }
        }
    }

    /// The variable names this value references.
    public var references: [String] {
        Self.parse(raw).compactMap { part in
            if case .variable(let name, _) = part { return name }
            return nil
        }
    }

    public func resolve(_ variables: [String: String]) -> Resolution {
        var result = ""
        var missing: [String] = []
        for part in Self.parse(raw) {
            switch part {
            case .literal(let text):
                result += text
            case .variable(let name, let fallback):
                if let value = variables[name], !value.isEmpty {
                    result += value
                } else if let fallback {
                    result += fallback
                } else {
                    missing.append(name)
                }
            }
        }
        return missing.isEmpty ? .value(result) : .unset(missing)
    }

    /// The resolved value, or `<unset: NAME>` for plans and dry runs.
    public func display(_ variables: [String: String]) -> String {
        resolve(variables).description
    }

    public var description: String { raw }

    enum Part {
        case literal(String)
        case variable(String, fallback: String?)
    }

    static func parse(_ text: String) -> [Part] {
        var parts: [Part] = []
        var literal = ""
        var index = text.startIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("${"), let close = text[index...].firstIndex(of: "}") {
                let inner = text[text.index(index, offsetBy: 2)..<close]
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                if let range = inner.range(of: ":-") {
                    parts.append(
                        .variable(
                            String(inner[..<range.lowerBound]), fallback: String(inner[range.upperBound...])))
                } else {
                    parts.append(.variable(String(inner), fallback: nil))
                }
                index = text.index(after: close)
            } else {
                literal.append(text[index])
                index = text.index(after: index)
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        return parts
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(raw)
    }

    public init(from decoder: any Decoder) throws {
        raw = try decoder.singleValueContainer().decode(String.self)
    }
}
