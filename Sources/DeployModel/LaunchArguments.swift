import DeviceSpec
import HADeployCore

/// The arguments the HA Dashboard app is launched with (read by the app as NSUserDefaults): the argv
/// form of `LaunchSettings.settings`, the one place typed values become argument text.
public struct LaunchArguments: Sendable, Hashable, Encodable, CustomStringConvertible {
    public struct Argument: Sendable, Hashable {
        public var flag: String
        public var value: ConfigValue.Resolution
        public var isSecret: Bool
    }

    public var items: [Argument]

    public init(items: [Argument] = []) { self.items = items }

    /// The argv form of typed launch settings: `-Key value`, booleans as `YES`/`NO` (what
    /// NSUserDefaults reads from argv), numbers in decimal.
    public init(_ settings: [LaunchSetting]) {
        items = settings.map { setting in
            let value: ConfigValue.Resolution
            switch setting.value {
            case .value(let typed): value = .value(typed.argumentText)
            case .unset(let names): value = .unset(names)
            }
            return Argument(flag: "-" + setting.key, value: value, isSecret: setting.isSecret)
        }
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

    public var description: String {
        redacted.map { $0.isEmpty || $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(redacted)
    }
}
