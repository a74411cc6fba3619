import MQTT
import Testing

/// The bytes of MQTT 3.1.1 packets, against the standard's own examples and limits.
struct MQTTPacketTests {
    @Test func remainingLengthUsesSevenBitsAByteLowFirst() {
        // OASIS MQTT 3.1.1 §2.2.3, table 2.4: the boundaries of one to four bytes.
        #expect(MQTTPacket.remainingLength(0) == [0x00])
        #expect(MQTTPacket.remainingLength(127) == [0x7F])
        #expect(MQTTPacket.remainingLength(128) == [0x80, 0x01])
        #expect(MQTTPacket.remainingLength(16_383) == [0xFF, 0x7F])
        #expect(MQTTPacket.remainingLength(16_384) == [0x80, 0x80, 0x01])
        #expect(MQTTPacket.remainingLength(268_435_455) == [0xFF, 0xFF, 0xFF, 0x7F])
    }

    @Test func connectCarriesTheUserNameAndPasswordFlags() {
        let packet = MQTTPacket.connect(clientID: "c", username: "u", password: "p", keepAliveSeconds: 60)
        #expect(
            packet == [
                0x10, 19, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0xC2, 0, 60, 0, 1, 0x63, 0, 1, 0x75, 0, 1, 0x70,
            ])
    }

    @Test func aRetainedQoS1PublishHasItsPacketID() {
        let packet = MQTTPacket.publish(
            MQTTMessage(topic: "a/b", payload: [1, 2], qos: .atLeastOnce, retain: true), packetID: 0x0102)
        #expect(packet == [0x33, 9, 0, 3, 0x61, 0x2F, 0x62, 0x01, 0x02, 1, 2])
        let plain = MQTTPacket.publish(MQTTMessage(topic: "t", payload: [], qos: .atMostOnce), packetID: nil)
        #expect(plain == [0x30, 3, 0, 1, 0x74])
    }

    @Test func answersAreDecodedWhenWholeAndAnythingElseIsRefused() throws {
        #expect(try MQTTPacket.decode([0x20, 0x02]) == nil)
        let connAck = try #require(try MQTTPacket.decode([0x20, 0x02, 0x00, 0x05, 0x40]))
        #expect(connAck.0 == .connAck(sessionPresent: false, returnCode: 5) && connAck.1 == 4)
        #expect(try MQTTPacket.decode([0x40, 0x02, 0x12, 0x34])?.0 == .pubAck(packetID: 0x1234))
        #expect(try MQTTPacket.decode([0xD0, 0x00])?.0 == .pingResp)
        // A subscription's message (QoS 0; retained when handed over at the subscription), SUBACK.
        let message = try #require(try MQTTPacket.decode([0x31, 0x05, 0, 1, 0x74, 1, 2]))
        #expect(
            message.0 == .publish(MQTTMessage(topic: "t", payload: [1, 2], qos: .atMostOnce, retain: true)))
        #expect(message.1 == 7)
        #expect(try MQTTPacket.decode([0x30, 0x05, 0, 1, 0x74, 1]) == nil, "not whole yet")
        #expect(try MQTTPacket.decode([0x90, 0x03, 0x00, 0x07, 0x00])?.0 == .subAck(packetID: 7, codes: [0]))
        // A QoS 1 message to a QoS 0 subscription, a topic past the end, a message larger than any
        // command, a Remaining Length of five bytes, a CONNACK of the wrong length.
        #expect(throws: MQTTError.self) { try MQTTPacket.decode([0x32, 0x07, 0, 1, 0x74, 0, 9, 1, 2]) }
        #expect(throws: MQTTError.self) { try MQTTPacket.decode([0x30, 0x03, 0, 9, 0x74]) }
        #expect(throws: MQTTError.self) { try MQTTPacket.decode([0x30, 0xFF, 0xFF, 0x01]) }
        #expect(throws: MQTTError.self) { try MQTTPacket.decode([0x20, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]) }
        #expect(throws: MQTTError.self) { try MQTTPacket.decode([0x20, 0x03, 0, 0, 0]) }
    }

    @Test func aSubscribeAsksQoS0ForEachFilter() {
        #expect(
            MQTTPacket.subscribe(packetID: 0x0102, filters: ["a/+", "b"])
                == [0x82, 12, 0x01, 0x02, 0, 3, 0x61, 0x2F, 0x2B, 0, 0, 1, 0x62, 0])
    }

    @Test func wildcardsAndEmptyLevelsAreRefusedAsPrefixes() {
        #expect(MQTTTopic.prefixProblem("hadeploy") == nil)
        #expect(MQTTTopic.prefixProblem("home/walls") == nil)
        #expect(MQTTTopic.prefixProblem("home/+")?.contains("wildcard") == true)
        #expect(MQTTTopic.prefixProblem("home/#")?.contains("wildcard") == true)
        #expect(MQTTTopic.prefixProblem("/home") != nil)
        #expect(MQTTTopic.prefixProblem("a//b") != nil)
        #expect(MQTTTopic.prefixProblem("") != nil)
    }

    @Test func brokerURLsAreParsedAndThePasswordIsNeverShown() throws {
        let broker = try MQTTBroker(url: "mqtt://walls:s3cr%40t@broker.lan")
        #expect(broker.host == "broker.lan" && broker.port == 1883 && !broker.secure)
        #expect(broker.username == "walls" && broker.password?.reveal() == "s3cr@t")
        #expect(broker.description == "mqtt://walls@broker.lan:1883")
        #expect("\(broker)".contains("s3cr") == false)
        let tls = try MQTTBroker(url: "mqtts://10.0.0.2")
        #expect(tls.secure && tls.port == 8883 && tls.username == nil)
        for bad in ["http://host", "mqtt://", "mqtt://host:1883/path", "", "mqtt://:pw@host"] {
            #expect(throws: MQTTError.self, "\(bad)") { try MQTTBroker(url: bad) }
        }
        do {
            _ = try MQTTBroker(url: "http://u:hunter2@host")
        } catch {
            #expect(!"\(error)".contains("hunter2"), "\(error)")
        }
    }
}
