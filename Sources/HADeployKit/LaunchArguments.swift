import HADeployCore

/// The arguments the HA Dashboard app is launched with (read by the app as NSUserDefaults).
public struct LaunchArguments: Sendable, Hashable, Encodable, CustomStringConvertible {
    public struct Argument: Sendable, Hashable {
        public var flag: String
        public var value: String
        public var isSecret: Bool
    }

    public var items: [Argument]

    public init(items: [Argument] = []) { self.items = items }

    public mutating func append(_ flag: String, _ value: String, secret: Bool = false) {
        items.append(Argument(flag: flag, value: value, isSecret: secret))
    }

    /// The real argv for the launch, secrets included: only for handing to the transport.
    public func revealed() -> [String] {
        items.flatMap { [$0.flag, $0.value] }
    }

    /// The argv as shown to people: secrets as `***`.
    public var redacted: [String] {
        items.flatMap { [$0.flag, $0.isSecret ? Secret.redacted : $0.value] }
    }

    /// The values that must be redacted wherever the argv could be echoed.
    public var secretValues: Set<String> {
        Set(items.filter(\.isSecret).map(\.value).filter { !$0.isEmpty && !$0.hasPrefix("<unset") })
    }

    public var description: String {
        redacted.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(redacted)
    }
}
