import DeviceSpec
import HADeployCore

/// The arguments the HA Dashboard app is launched with (read by the app as NSUserDefaults).
public struct LaunchArguments: Sendable, Hashable, Encodable, CustomStringConvertible {
    public struct Argument: Sendable, Hashable {
        public var flag: String
        public var value: ConfigValue.Resolution
        public var isSecret: Bool
    }

    public var items: [Argument]

    public init(items: [Argument] = []) { self.items = items }

    public mutating func append(_ flag: String, _ value: String, secret: Bool = false) {
        items.append(Argument(flag: flag, value: .value(value), isSecret: secret))
    }

    public mutating func append(_ flag: String, _ value: ConfigValue.Resolution, secret: Bool = false) {
        items.append(Argument(flag: flag, value: value, isSecret: secret))
    }

    /// The real argv for the launch, secrets included: only for handing to the transport. A device
    /// with an unset value never launches (the pipeline stops on `unsetKeys` first).
    public func revealed() -> [String] {
        items.flatMap { [$0.flag, $0.value.value ?? ""] }
    }

    /// The argv as shown to people: secrets as `***`, unset values as `<unset: KEY>`.
    public var redacted: [String] {
        items.flatMap { item -> [String] in
            let shown: String
            switch item.value {
            case .value(let text): shown = item.isSecret ? Secret.redacted : text
            case .unset: shown = item.value.description
            }
            return [item.flag, shown]
        }
    }

    /// The values that must be redacted wherever the argv could be echoed.
    public var secretValues: Set<String> {
        Set(items.filter(\.isSecret).compactMap(\.value.value).filter { !$0.isEmpty })
    }

    /// `-Key value` pairs as NSUserDefaults keys, for backends that write the app's preferences.
    public var defaults: [String: String] {
        var result: [String: String] = [:]
        for item in items where item.flag.hasPrefix("-") {
            if let value = item.value.value { result[String(item.flag.dropFirst())] = value }
        }
        return result
    }

    public var description: String {
        redacted.map { $0.isEmpty || $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(redacted)
    }
}
