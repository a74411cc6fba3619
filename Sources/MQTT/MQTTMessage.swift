/// One PUBLISH: a topic, its bytes, the delivery it asks for and whether the broker keeps it for
/// later subscribers (retained).
public struct MQTTMessage: Sendable, Hashable {
    public enum QoS: UInt8, Sendable, Hashable {
        /// At most once: nothing comes back.
        case atMostOnce = 0
        /// At least once: the broker answers PUBACK.
        case atLeastOnce = 1
    }

    public var topic: String
    public var payload: [UInt8]
    public var qos: QoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: QoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: QoS = .atLeastOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }
}
