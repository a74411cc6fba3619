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
}
