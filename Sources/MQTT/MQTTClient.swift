import Foundation
import HADeployCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A small MQTT 3.1.1 client: CONNECT (user name and password), PUBLISH at QoS 0 or 1 (retained
/// or not), SUBSCRIBE at QoS 0 (the messages in `messages`), PINGREQ and DISCONNECT, over TCP or
/// TLS. Every network step has a deadline; when it passes the connection is closed and the step
/// throws `.timedOut`.
public actor MQTTClient {
    public let broker: MQTTBroker
    public let clientID: String
    /// How long each step (connect and CONNACK, one PUBLISH and its PUBACK, a ping) may take.
    public let stepDeadline: Duration
    let clock: any WallClock
    private var channel: (any Channel)?
    private var lastPacketID: UInt16 = 0
    /// The messages of this client's subscriptions (`subscribe`), as the broker sends them; the
    /// stream ends when the connection does.
    public nonisolated let messages: AsyncStream<MQTTMessage>
    private let received: AsyncStream<MQTTMessage>.Continuation

    public init(broker: MQTTBroker, clientID: String, stepDeadline: Duration, clock: any WallClock) {
        self.broker = broker
        self.clientID = clientID
        self.stepDeadline = stepDeadline
        self.clock = clock
        (messages, received) = AsyncStream.makeStream(
            of: MQTTMessage.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// TCP (and TLS) then CONNECT, within one step deadline. `will`: what the broker publishes for
    /// this client if it goes away without DISCONNECT.
    public func connect(will: MQTTMessage? = nil, keepAliveSeconds: UInt16 = 60) async throws {
        precondition(channel == nil, "connect() once")
        if let will, let problem = MQTTTopic.problem(will.topic) {
            throw MQTTError(.invalidConfiguration, "the topic \(will.topic) \(problem)")
        }
        let broker = self.broker
        let tls = try broker.secure ? NIOSSLContext(configuration: Self.tlsConfiguration(broker)) : nil
        let connectTimeout = TimeAmount.nanoseconds(
            stepDeadline.components.seconds * 1_000_000_000 + stepDeadline.components.attoseconds
                / 1_000_000_000)
        let packet = MQTTPacket.connect(
            clientID: clientID, username: broker.username, password: broker.password?.reveal(),
            keepAliveSeconds: keepAliveSeconds, will: will)
        let opened = OpenedChannel()
        let received = self.received
        let answer = try await step("the connection (CONNECT)", opened: opened) {
            let channel: any Channel
            do {
                channel = try await Self.bootstrap(
                    tls: tls, host: broker.host, connectTimeout: connectTimeout, received: received
                )
                .connect(host: broker.host, port: broker.port).get()
            } catch {
                throw Self.failure(error, broker: broker, connecting: true)
            }
            opened.set(channel)
            try Task.checkCancellation()
            return try await Self.send(packet, awaiting: .connAck, on: channel, broker: broker)
        }
        guard case .connAck(_, let code) = answer, let channel = opened.channel else {
            throw MQTTPacket.violation("an answer other than CONNACK to CONNECT")
        }
        guard code == 0 else {
            channel.close(promise: nil)
            throw MQTTError(.refused(code: code), "the MQTT broker at \(broker) \(MQTTPacket.refusal(code))")
        }
        self.channel = channel
    }

    private static func bootstrap(
        tls: NIOSSLContext?, host: String, connectTimeout: TimeAmount,
        received: AsyncStream<MQTTMessage>.Continuation
    ) -> ClientBootstrap {
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(try Self.tlsHandler(tls, host: host)) }
                    try pipeline.addHandler(MQTTSession(received: received))
                }
            }
    }

    /// One PUBLISH; at QoS 1 it returns once the broker answered PUBACK.
    public func publish(_ message: MQTTMessage) async throws {
        if let problem = MQTTTopic.problem(message.topic) {
            throw MQTTError(.invalidConfiguration, "the topic \(message.topic) \(problem)")
        }
        guard message.payload.count + message.topic.utf8.count + 4 <= MQTTPacket.maxRemainingLength else {
            throw MQTTError(
                .invalidConfiguration, "the message for \(message.topic) is larger than MQTT allows")
        }
        let channel = try connected()
        var packetID: UInt16?
        if message.qos == .atLeastOnce {
            lastPacketID = lastPacketID == .max ? 1 : lastPacketID + 1
            packetID = lastPacketID
        }
        let bytes = MQTTPacket.publish(message, packetID: packetID)
        let awaiting: MQTTRequest.Awaiting = packetID.map { .pubAck($0) } ?? .nothing
        let broker = self.broker
        _ = try await step("PUBLISH to \(message.topic)", opened: OpenedChannel(channel)) {
            try await Self.send(bytes, awaiting: awaiting, on: channel, broker: broker)
        }
    }

    /// SUBSCRIBE to `filters` at QoS 0 (wildcards allowed); returns once the broker granted every one.
    /// Their messages arrive in `messages`, retained ones with `retain` set.
    public func subscribe(_ filters: [String]) async throws {
        let channel = try connected()
        lastPacketID = lastPacketID == .max ? 1 : lastPacketID + 1
        let packetID = lastPacketID
        let broker = self.broker
        let answer = try await step(
            "SUBSCRIBE to \(filters.joined(separator: ", "))", opened: OpenedChannel(channel)
        ) {
            try await Self.send(
                MQTTPacket.subscribe(packetID: packetID, filters: filters), awaiting: .subAck(packetID),
                on: channel, broker: broker)
        }
        guard case .subAck(_, let codes)? = answer, codes.count == filters.count, !codes.contains(0x80) else {
            throw MQTTError(
                .refused(code: 0x80),
                "the MQTT broker at \(broker) refused the subscription to \(filters.joined(separator: ", ")): "
                    + "check the broker's access rules for this user (docs/home-assistant.md)")
        }
    }

    /// PINGREQ, answered by PINGRESP: the broker is still there.
    public func ping() async throws {
        let channel = try connected()
        let broker = self.broker
        _ = try await step("PINGREQ", opened: OpenedChannel(channel)) {
            try await Self.send(MQTTPacket.pingReq, awaiting: .pingResp, on: channel, broker: broker)
        }
    }

    /// DISCONNECT (the will is not published) and close; never throws: the broker drops the will on
    /// DISCONNECT, or on the keep-alive's end publishes it, either way the connection is over.
    public func disconnect() async {
        guard let channel else { return }
        self.channel = nil
        let broker = self.broker
        _ = try? await step("DISCONNECT", opened: OpenedChannel(channel)) {
            try await Self.send(MQTTPacket.disconnect, awaiting: .nothing, on: channel, broker: broker)
        }
        try? await channel.close()
    }

    /// Closes without DISCONNECT: the broker publishes the will.
    public func drop() async {
        guard let channel else { return }
        self.channel = nil
        try? await channel.close()
    }

    private func connected() throws -> any Channel {
        guard let channel, channel.isActive else {
            throw MQTTError(.unreachable, "the connection to the MQTT broker at \(broker) is closed")
        }
        return channel
    }

    /// `body` within the step deadline; when it passes (or the task is cancelled) the channel is
    /// closed, which fails whatever the body awaits.
    private func step<T: Sendable>(
        _ what: String, opened: OpenedChannel, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let answer = try await clock.withDeadline(stepDeadline) {
            try await withTaskCancellationHandler {
                try await body()
            } onCancel: {
                opened.close()
            }
        }
        guard let answer else {
            opened.close()
            throw MQTTError(
                .timedOut,
                "the MQTT broker at \(broker) did not answer \(what) within \(Self.seconds(stepDeadline)): "
                    + "check that it is running and not overloaded")
        }
        return answer
    }

    private static func send(
        _ bytes: [UInt8], awaiting: MQTTRequest.Awaiting, on channel: any Channel, broker: MQTTBroker
    ) async throws -> MQTTPacket.Incoming? {
        let reply = awaiting == .nothing ? nil : channel.eventLoop.makePromise(of: MQTTPacket.Incoming.self)
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(MQTTRequest(bytes: bytes, awaiting: awaiting, reply: reply), promise: written)
        do {
            try await written.futureResult.get()
            return try await reply?.futureResult.get()
        } catch {
            // The reply's promise must not be dropped unfulfilled when the write failed first.
            reply?.fail(error)
            throw failure(error, broker: broker, connecting: false)
        }
    }

    static func tlsConfiguration(_ broker: MQTTBroker) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = broker.caFile {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw MQTTError(
                    .invalidConfiguration,
                    "the CA file \(caFile) for the MQTT broker at \(broker) cannot be read as PEM certificates: "
                        + "check MQTT_CA_FILE")
            }
            guard !certificates.isEmpty else {
                throw MQTTError(
                    .invalidConfiguration,
                    "the CA file \(caFile) for the MQTT broker at \(broker) holds no PEM certificate: check MQTT_CA_FILE"
                )
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        return tls
    }

    /// With SNI for a host name; an IP address may not be sent as SNI (the certificate is then
    /// checked against the address).
    static func tlsHandler(_ context: NIOSSLContext, host: String) throws -> NIOSSLClientHandler {
        do {
            return try NIOSSLClientHandler(context: context, serverHostname: host)
        } catch let error as NIOSSLExtraError where error == .cannotUseIPAddressInSNI {
            return try NIOSSLClientHandler(context: context, serverHostname: nil)
        }
    }

    /// NIO's and NIOSSL's errors in words a user can act on.
    static func failure(_ error: any Error, broker: MQTTBroker, connecting: Bool) -> MQTTError {
        if let error = error as? MQTTError { return error }
        let text = String(describing: error)
        if error is NIOSSLError || text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("SSL") {
            if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate") {
                return MQTTError(
                    .tls,
                    "the TLS certificate of the MQTT broker at \(broker) does not verify: give its CA (or "
                        + "its own certificate) in MQTT_CA_FILE, or fix the broker's certificate")
            }
            return MQTTError(
                .tls,
                "the TLS handshake with the MQTT broker at \(broker) failed (\(text)): does the broker "
                    + "speak TLS on that port? (mqtts:// is TLS, mqtt:// plain TCP)")
        }
        for (needle, words) in socketFailures where text.contains(needle) {
            return MQTTError(.unreachable, "cannot reach the MQTT broker at \(broker): \(words)")
        }
        if let channelError = error as? ChannelError {
            switch channelError {
            case .connectTimeout:
                return MQTTError(.timedOut, "cannot reach the MQTT broker at \(broker): no answer to connect")
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed:
                return MQTTError(.unreachable, "the MQTT broker at \(broker) closed the connection")
            default: break
            }
        }
        return MQTTError(
            .unreachable,
            connecting
                ? "cannot reach the MQTT broker at \(broker): \(text)"
                : "the connection to the MQTT broker at \(broker) failed: \(text)")
    }

    static let socketFailures: [(String, String)] = [
        ("errno: 111", "the connection was refused (is the broker running on that port?)"),
        ("Connection refused", "the connection was refused (is the broker running on that port?)"),
        ("errno: 104", "the broker reset the connection"),
        ("Connection reset", "the broker reset the connection"),
        ("errno: 113", "no route to the host (is it on this network?)"),
        ("errno: 101", "the network is unreachable"),
        ("errno: 110", "the connection timed out (no answer from the host)"),
        ("connectTimeout", "the connection timed out (no answer from the host)"),
        ("NXDOMAIN", "the host name does not resolve"),
        ("Name or service not known", "the host name does not resolve"),
        ("errno: 32", "the broker closed the connection (broken pipe)"),
    ]

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }
}

/// The channel a step opened (set once TCP connected), so a deadline can close it from another task;
/// one set after the close is closed at once.
final class OpenedChannel: Sendable {
    private let state: NIOLockedValueBox<(channel: (any Channel)?, closed: Bool)>

    init(_ channel: (any Channel)? = nil) { state = NIOLockedValueBox((channel, false)) }

    var channel: (any Channel)? { state.withLockedValue { $0.channel } }

    func set(_ channel: any Channel) {
        let closed = state.withLockedValue { state in
            state.channel = channel
            return state.closed
        }
        if closed { channel.close(promise: nil) }
    }

    func close() {
        let channel = state.withLockedValue { state in
            state.closed = true
            return state.channel
        }
        channel?.close(promise: nil)
    }
}
