/// Topic names a publisher may use (MQTT 3.1.1 §4.7): the wildcards `+` and `#` only subscribe.
public enum MQTTTopic {
    /// Why `topic` cannot be published to, nil when it can.
    public static func problem(_ topic: String) -> String? {
        if topic.isEmpty { return "is empty" }
        if topic.utf8.count > MQTTPacket.maxStringBytes {
            return "is longer than \(MQTTPacket.maxStringBytes) bytes"
        }
        if topic.contains("+") || topic.contains("#") {
            return "holds a wildcard (+ or #), which only subscriptions may use"
        }
        if topic.unicodeScalars.contains(where: { $0.value == 0 }) { return "holds a NUL character" }
        return nil
    }

    /// Why `prefix` cannot be the first levels of hadeploy's topics, nil when it can: a topic name
    /// without a `/` at either end or an empty level (`a//b`), which would publish beside the prefix.
    public static func prefixProblem(_ prefix: String) -> String? {
        if let problem = problem(prefix) { return problem }
        if prefix.hasPrefix("/") || prefix.hasSuffix("/") { return "starts or ends with /" }
        if prefix.contains("//") { return "has an empty level (//)" }
        if prefix.hasPrefix("$") { return "starts with $, which brokers keep for themselves ($SYS)" }
        if prefix.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "holds a control character"
        }
        return nil
    }
}
