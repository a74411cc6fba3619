/// MQTT 3.1.1 packets as bytes (OASIS standard, §2–3): the few a publisher (and a QoS 0 subscriber)
/// sends, and what it reads.
public enum MQTTPacket {
    /// What the broker may send this client.
    public enum Incoming: Sendable, Hashable {
        case connAck(sessionPresent: Bool, returnCode: UInt8)
        case pubAck(packetID: UInt16)
        case pingResp
        /// §3.9: one return code per topic filter (0 granted at QoS 0, 0x80 refused).
        case subAck(packetID: UInt16, codes: [UInt8])
        /// A message of a subscription (always QoS 0 here: the client subscribes at QoS 0).
        case publish(MQTTMessage)
    }

    /// The largest message a subscription may bring: hadeploy subscribes to commands, a few bytes each.
    public static let maxIncomingPublish = 16_384

    /// §2.2.3: the largest Remaining Length four bytes can hold.
    public static let maxRemainingLength = 268_435_455
    /// §1.5.3: a UTF-8 string's length is a 16-bit number.
    public static let maxStringBytes = 65535

    public static func connect(
        clientID: String, username: String?, password: String?, keepAliveSeconds: UInt16,
        will: MQTTMessage? = nil
    ) -> [UInt8] {
        var flags: UInt8 = 0x02  // clean session: nothing is kept for a publisher
        if username != nil { flags |= 0x80 }
        if password != nil { flags |= 0x40 }
        if let will {
            flags |= 0x04 | (will.qos.rawValue << 3) | (will.retain ? 0x20 : 0)
        }
        var body: [UInt8] = []
        string("MQTT", into: &body)
        body.append(4)  // protocol level 4: MQTT 3.1.1
        body.append(flags)
        body.append(contentsOf: [UInt8(keepAliveSeconds >> 8), UInt8(keepAliveSeconds & 0xFF)])
        string(clientID, into: &body)
        if let will {
            string(will.topic, into: &body)
            binary(will.payload, into: &body)
        }
        if let username { string(username, into: &body) }
        if let password { string(password, into: &body) }
        return frame(0x10, body)
    }

    /// PUBLISH; `packetID` only for QoS 1 (§3.3.2.2).
    public static func publish(_ message: MQTTMessage, packetID: UInt16?) -> [UInt8] {
        var header: UInt8 = 0x30 | (message.qos.rawValue << 1)
        if message.retain { header |= 0x01 }
        var body: [UInt8] = []
        body.reserveCapacity(message.topic.utf8.count + 4 + message.payload.count)
        string(message.topic, into: &body)
        if message.qos != .atMostOnce, let packetID {
            body.append(contentsOf: [UInt8(packetID >> 8), UInt8(packetID & 0xFF)])
        }
        body.append(contentsOf: message.payload)
        return frame(header, body)
    }

    /// SUBSCRIBE (§3.8) to `filters`, each at QoS 0: a command is acted on once or not at all.
    public static func subscribe(packetID: UInt16, filters: [String]) -> [UInt8] {
        var body = [UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
        for filter in filters {
            string(filter, into: &body)
            body.append(0)
        }
        return frame(0x82, body)
    }

    public static let pingReq: [UInt8] = [0xC0, 0x00]
    public static let disconnect: [UInt8] = [0xE0, 0x00]

    /// The Remaining Length field (§2.2.3): seven bits a byte, low first.
    public static func remainingLength(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var left = value
        repeat {
            var byte = UInt8(left % 128)
            left /= 128
            if left > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while left > 0
        return bytes
    }

    /// One whole packet at the start of `bytes`: the packet and how many bytes it took, nil when more
    /// bytes are needed. Throws on what a broker may not send a publisher.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> (Incoming, Int)? {
        let head = Array(bytes.prefix(5))
        guard head.count >= 2 else { return nil }
        var length = 0
        var multiplier = 1
        var index = 1
        while true {
            guard index < head.count else { return nil }
            let byte = head[index]
            length += Int(byte & 0x7F) * multiplier
            index += 1
            if byte & 0x80 == 0 { break }
            multiplier *= 128
            if index > 4 { throw violation("a Remaining Length longer than four bytes") }
        }
        // Every answer this client reads is two bytes long (CONNACK, PUBACK) or empty (PINGRESP); a
        // SUBACK has a code per filter; a subscription's message is a command, a few bytes.
        let type = head[0] >> 4
        let limit = type == 3 ? maxIncomingPublish : type == 9 ? 2 + 64 : 2
        guard length <= limit else {
            throw violation("a packet of \(length) bytes (type \(type)), more than this client ever asks for")
        }
        guard bytes.count >= index + length else { return nil }
        let body = Array(bytes.dropFirst(index).prefix(length))
        let total = index + length
        if type == 3 { return (.publish(try message(flags: head[0] & 0x0F, body)), total) }
        switch head[0] {
        case 0x90 where length >= 3:
            return (
                .subAck(packetID: UInt16(body[0]) << 8 | UInt16(body[1]), codes: Array(body[2...])), total
            )
        case 0x20 where length == 2:
            return (.connAck(sessionPresent: body[0] & 0x01 != 0, returnCode: body[1]), total)
        case 0x40 where length == 2:
            return (.pubAck(packetID: UInt16(body[0]) << 8 | UInt16(body[1])), total)
        case 0xD0 where length == 0:
            return (.pingResp, total)
        default:
            throw violation(
                "packet type \(type) (flags \(head[0] & 0x0F), \(length) bytes), which this client never asks for"
            )
        }
    }

    /// A PUBLISH's body (§3.3): its topic, then the payload; QoS 0 only (the client subscribes at
    /// QoS 0, so the broker sends nothing else).
    static func message(flags: UInt8, _ body: [UInt8]) throws -> MQTTMessage {
        guard (flags >> 1) & 0x03 == 0 else {
            throw violation("a message at QoS \((flags >> 1) & 0x03) to a QoS 0 subscription")
        }
        guard body.count >= 2, 2 + (Int(body[0]) << 8 | Int(body[1])) <= body.count else {
            throw violation("a message whose topic runs past its end")
        }
        let end = 2 + (Int(body[0]) << 8 | Int(body[1]))
        return MQTTMessage(
            topic: String(decoding: body[2..<end], as: UTF8.self), payload: Array(body[end...]),
            qos: .atMostOnce,
            retain: flags & 0x01 != 0)
    }

    /// Why a broker refused a CONNECT (§3.2.2.3), with what to do.
    public static func refusal(_ code: UInt8) -> String {
        switch code {
        case 1: return "does not speak MQTT 3.1.1 (CONNACK 1: unacceptable protocol version)"
        case 2: return "refused the client id (CONNACK 2: identifier rejected)"
        case 3: return "is up but its MQTT service is unavailable (CONNACK 3): try again later"
        case 4:
            return "refused the user name or password (CONNACK 4: bad user name or password): check the "
                + "credentials in MQTT_URL or --publish"
        case 5:
            return "refused this login (CONNACK 5: not authorized): check the user name and password in "
                + "MQTT_URL or --publish, and the broker's access rules"
        default: return "refused the connection with CONNACK return code \(code)"
        }
    }

    static func violation(_ what: String) -> MQTTError {
        MQTTError(.protocolViolation, "the broker sent \(what): is this an MQTT 3.1.1 broker?")
    }

    static func string(_ text: String, into body: inout [UInt8]) {
        binary(Array(text.utf8), into: &body)
    }

    static func binary(_ bytes: [UInt8], into body: inout [UInt8]) {
        body.append(contentsOf: [UInt8(bytes.count >> 8 & 0xFF), UInt8(bytes.count & 0xFF)])
        body.append(contentsOf: bytes)
    }

    static func frame(_ header: UInt8, _ body: [UInt8]) -> [UInt8] {
        [header] + remainingLength(body.count) + body
    }
}
