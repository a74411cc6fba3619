import Foundation
import HADeployCore
import MQTT
import TestSupport
import Testing

/// The client against a real Mosquitto on loopback (Debian's package): logins, retained QoS 1
/// publishes read back with mosquitto_sub, and each way a broker can fail.
@Suite(.serialized)
struct MQTTClientTests {
    static func client(_ broker: MQTTBroker, deadline: Duration = .seconds(5)) -> MQTTClient {
        MQTTClient(
            broker: broker, clientID: "test-\(UUID().uuidString.prefix(8))", stepDeadline: deadline,
            clock: TestHost.clock)
    }

    @Test func retainedQoS1MessagesReachTheBroker() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        let client = Self.client(try MQTTBroker(url: mosquitto.url))
        try await client.connect()
        try await client.ping()
        try await client.publish(MQTTMessage(topic: "t/one", text: "first", retain: true))
        try await client.publish(MQTTMessage(topic: "t/two", payload: [0, 1, 2, 255], retain: true))
        try await client.publish(MQTTMessage(topic: "t/zero", text: "qos0", qos: .atMostOnce, retain: true))
        // A payload larger than one TCP segment and one remaining-length byte.
        let big = (0..<300_000).map { UInt8($0 % 251) }
        try await client.publish(MQTTMessage(topic: "t/big", payload: big, retain: true))
        try await client.publish(MQTTMessage(topic: "t/live", text: "not kept"))
        await client.disconnect()
        let retained = try await mosquitto.retained("t/#")
        #expect(retained["t/one"] == Data("first".utf8))
        #expect(retained["t/two"] == Data([0, 1, 2, 255]))
        #expect(retained["t/zero"] == Data("qos0".utf8))
        #expect(retained["t/big"] == Data(big))
        #expect(retained["t/live"] == nil)

        // An empty retained payload removes the retained message.
        let again = Self.client(try MQTTBroker(url: mosquitto.url))
        try await again.connect()
        try await again.publish(MQTTMessage(topic: "t/one", payload: [], retain: true))
        await again.disconnect()
        #expect(try await mosquitto.retained("t/#")["t/one"] == nil)
    }

    /// A QoS 0 subscription with wildcards: a message published live arrives with `retain` off, one
    /// the broker kept arrives first with it on (what a command handler must tell apart), and a topic
    /// outside the filters never arrives; the stream ends when the connection does.
    @Test func aSubscriptionGetsLiveAndRetainedMessagesApart() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        let broker = try MQTTBroker(url: mosquitto.url)
        let publisher = Self.client(broker)
        try await publisher.connect()
        try await publisher.publish(
            MQTTMessage(topic: "hd/node1/command/relaunch", text: "PRESS", retain: true))
        let subscriber = Self.client(broker)
        try await subscriber.connect()
        try await subscriber.subscribe(["hd/+/command/+"])
        try await publisher.publish(MQTTMessage(topic: "hd/node1/state", text: "not a command"))
        try await publisher.publish(MQTTMessage(topic: "hd/node2/command/refresh", text: "PRESS"))
        var got: [MQTTMessage] = []
        for await message in subscriber.messages {
            got.append(message)
            if got.count == 2 { break }
        }
        #expect(got.map(\.topic) == ["hd/node1/command/relaunch", "hd/node2/command/refresh"])
        #expect(got.map(\.retain) == [true, false])
        #expect(got.allSatisfy { $0.payload == Array("PRESS".utf8) })
        try await subscriber.ping()
        await publisher.disconnect()
        await subscriber.drop()
        var after = 0
        for await _ in subscriber.messages { after += 1 }
        #expect(after == 0, "the stream ended with the connection")
    }

    @Test func aWrongPasswordIsRefusedInOneLineWithoutThePassword() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        let wrong = "wrong-\(UUID().uuidString.prefix(6))"
        let client = Self.client(
            try MQTTBroker(url: "mqtt://\(mosquitto.user):\(wrong)@127.0.0.1:\(mosquitto.port)"))
        let error = try await #require(throws: MQTTError.self) { try await client.connect() }
        #expect(error.isCredentialsRefused, "\(error)")
        #expect(error.message.contains("password") && !error.message.contains(wrong), "\(error)")
        #expect(!error.message.contains("\n"))
    }

    @Test func aBrokerThatIsNotThereIsUnreachable() async throws {
        let mosquitto = try await MosquittoBroker()
        let url = mosquitto.url
        mosquitto.stop()
        let client = Self.client(try MQTTBroker(url: url))
        let error = try await #require(throws: MQTTError.self) { try await client.connect() }
        #expect(error.kind == .unreachable, "\(error)")
        #expect(error.message.contains("refused") && !error.message.contains(mosquitto.password), "\(error)")
    }

    @Test func aStuckBrokerEndsEachStepAtItsDeadline() async throws {
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        let broker = try MQTTBroker(url: mosquitto.url)
        mosquitto.pause()
        let started = ContinuousClock.now
        let error = try await #require(throws: MQTTError.self) {
            try await Self.client(broker, deadline: .seconds(1)).connect()
        }
        #expect(error.kind == .timedOut, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(4))

        // Connected, then stuck: the publish ends at its own deadline.
        mosquitto.resume()
        let client = Self.client(broker, deadline: .seconds(1))
        try await client.connect()
        mosquitto.pause()
        let publishStarted = ContinuousClock.now
        let stalled = try await #require(throws: MQTTError.self) {
            try await client.publish(MQTTMessage(topic: "t/x", text: "x", retain: true))
        }
        #expect(stalled.kind == .timedOut, "\(stalled)")
        #expect(ContinuousClock.now - publishStarted < .seconds(4))
        mosquitto.resume()
    }

    @Test func aSelfSignedBrokerDoesNotVerifyUntilItsCertificateIsGiven() async throws {
        let mosquitto = try await MosquittoBroker(tls: true)
        defer { mosquitto.stop() }
        let refused = Self.client(try MQTTBroker(url: mosquitto.url))
        let error = try await #require(throws: MQTTError.self) { try await refused.connect() }
        #expect(error.kind == .tls, "\(error)")
        #expect(
            error.message.contains("does not verify") && error.message.contains("MQTT_CA_FILE"), "\(error)")

        let trusted = Self.client(try MQTTBroker(url: mosquitto.url, caFile: mosquitto.certificate?.path))
        try await trusted.connect()
        try await trusted.publish(MQTTMessage(topic: "tls/ok", text: "yes", retain: true))
        await trusted.disconnect()
        #expect(try await mosquitto.retained("tls/#")["tls/ok"] == Data("yes".utf8))

        // Plain MQTT to the TLS port: the broker drops it; a clear line, within the deadline.
        let plain = Self.client(
            try MQTTBroker(url: "mqtt://\(mosquitto.user):\(mosquitto.password)@127.0.0.1:\(mosquitto.port)"),
            deadline: .seconds(3))
        let mismatch = try await #require(throws: MQTTError.self) { try await plain.connect() }
        #expect(!mismatch.message.contains(mosquitto.password), "\(mismatch)")
    }
}
