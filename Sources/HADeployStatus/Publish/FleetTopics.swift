import MQTT

/// Where the fleet is published: Home Assistant's discovery prefix (`homeassistant`, its default)
/// and hadeploy's own prefix for states, availability and screenshots.
public struct FleetTopics: Sendable, Hashable {
    public var discoveryPrefix: String
    public var topicPrefix: String

    /// Both prefixes checked: a wildcard, an empty level or a leading `/` is refused in one line.
    public init(discoveryPrefix: String = "homeassistant", topicPrefix: String = "hadeploy") throws {
        for (prefix, option) in [(discoveryPrefix, "--discovery-prefix"), (topicPrefix, "--topic-prefix")] {
            if let problem = MQTTTopic.prefixProblem(prefix) {
                throw MQTTError(
                    .invalidConfiguration, "the MQTT topic prefix \"\(prefix)\" (\(option)) \(problem)")
            }
        }
        self.discoveryPrefix = discoveryPrefix
        self.topicPrefix = topicPrefix
    }

    /// `<discovery>/<component>/<node>/<key>/config`.
    public func config(_ component: String, node: String, key: String) -> String {
        "\(discoveryPrefix)/\(component)/\(node)/\(key)/config"
    }

    /// `<prefix>/<node>/<key>`.
    public func state(node: String, key: String) -> String { "\(topicPrefix)/\(node)/\(key)" }

    /// `<prefix>/<node>/availability`: `online` or `offline`, retained.
    public func availability(node: String) -> String { "\(topicPrefix)/\(node)/availability" }

    /// `<prefix>/<node>/command/<key>`: where a device's buttons and update entity send their commands.
    public func command(node: String, key: String) -> String { "\(topicPrefix)/\(node)/command/\(key)" }

    /// Every device's commands: what the service subscribes to.
    public var commands: String { "\(topicPrefix)/+/command/+" }

    /// Which hosts' services drive a device (`<prefix>/<node>/host`, retained): every device's.
    public var claims: String { "\(topicPrefix)/+/host" }

    /// The node of a claim topic of this prefix; nil for any other topic.
    public func claim(in topic: String) -> String? {
        let prefix = topicPrefix + "/"
        guard topic.hasPrefix(prefix), topic.hasSuffix("/host") else { return nil }
        let node = topic.dropFirst(prefix.count).dropLast("/host".count)
        return node.isEmpty || node.contains("/") ? nil : String(node)
    }

    /// The node and the command of a command topic of this prefix; nil for any other topic.
    public func command(in topic: String) -> (node: String, key: String)? {
        let prefix = topicPrefix + "/"
        guard topic.hasPrefix(prefix) else { return nil }
        let parts = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "command", !parts[0].isEmpty, !parts[2].isEmpty else {
            return nil
        }
        return (String(parts[0]), String(parts[2]))
    }
}
