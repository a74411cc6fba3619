import DeployModel
import Foundation
import HADeployCore
import MQTT

/// Publishes a status to an MQTT broker for Home Assistant: one connection, every device's discovery
/// configs, states and availability at QoS 1, and the removal of devices no longer in devices.yaml.
/// Which devices it published last is kept in `recordFile`, so a removed device's entities are
/// removed even though devices.yaml no longer names it.
public struct FleetPublisher: Sendable {
    public var broker: MQTTBroker
    public var discovery: FleetDiscovery
    public var recordFile: URL
    public var fileSystem: any FileSystem
    public var clock: any WallClock
    /// Each MQTT step (connect, one publish) within this.
    public var stepDeadline: Duration
    public var clientID: String

    public init(
        broker: MQTTBroker, discovery: FleetDiscovery, recordFile: URL, fileSystem: any FileSystem,
        clock: any WallClock, stepDeadline: Duration, clientID: String
    ) {
        self.broker = broker
        self.discovery = discovery
        self.recordFile = recordFile
        self.fileSystem = fileSystem
        self.clock = clock
        self.stepDeadline = stepDeadline
        self.clientID = clientID
    }

    /// What one publication did.
    public struct Summary: Sendable, Hashable {
        /// devices.yaml ids published, in order.
        public var published: [String]
        /// devices.yaml ids whose entities were removed (no longer configured).
        public var removed: [String]
        /// devices.yaml ids published as unavailable (they did not answer).
        public var unavailable: [String]
    }

    /// Publishes `devices`; `configured` is every device id devices.yaml names now (a device published
    /// before and not in it is removed; nil: devices.yaml was not read, nothing is removed).
    public func publish(_ devices: [PublishedDevice], configured: Set<String>?) async throws -> Summary {
        let client = MQTTClient(broker: broker, clientID: clientID, stepDeadline: stepDeadline, clock: clock)
        try await client.connect()
        do {
            var record = readRecord()
            var summary = Summary(published: [], removed: [], unavailable: [])
            for device in devices {
                for message in discovery.messages(for: device) { try await client.publish(message) }
                record[device.id] = device.node
                summary.published.append(device.id)
                if !device.status.reachable { summary.unavailable.append(device.id) }
            }
            for (id, node) in record.sorted(by: { $0.key < $1.key }) {
                guard let configured, !configured.contains(id) else { continue }
                // A node still published under another id (the device renamed in devices.yaml, same
                // UDID) keeps its entities.
                if !devices.contains(where: { $0.node == node }) {
                    for message in discovery.removal(node: node) { try await client.publish(message) }
                }
                record[id] = nil
                summary.removed.append(id)
            }
            try writeRecord(record)
            await client.disconnect()
            return summary
        } catch {
            await client.drop()
            throw error
        }
    }

    func readRecord() -> [String: String] {
        guard let data = fileSystem.contents(atPath: recordFile.path),
            let record = try? JSONDecoder().decode(PublishedRecord.self, from: data)
        else { return [:] }
        return record.nodes
    }

    func writeRecord(_ nodes: [String: String]) throws {
        try fileSystem.createDirectory(
            at: recordFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try fileSystem.write(encoder.encode(PublishedRecord(nodes: nodes)), to: recordFile, options: .atomic)
    }

    /// `.hadeploy/published/<broker and prefixes>.json`: one record per broker and topic prefix.
    public static func recordName(broker: MQTTBroker, topics: FleetTopics) -> String {
        let key = "\(broker.host):\(broker.port)|\(topics.discoveryPrefix)|\(topics.topicPrefix)"
        return FleetDiscovery.node(udid: nil, id: key).replacingOccurrences(of: "hadeploy_", with: "mqtt-")
            + ".json"
    }
}

/// devices.yaml id → node id, for what was published to one broker.
struct PublishedRecord: Codable {
    var nodes: [String: String]
}
