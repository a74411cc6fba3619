import NIOCore

/// What the client hands the pipeline: a packet's bytes and, when the broker answers it, the promise
/// its answer completes.
struct MQTTRequest: Sendable {
    enum Awaiting: Sendable, Hashable {
        case nothing
        case connAck
        case pubAck(UInt16)
        case pingResp
        case subAck(UInt16)
    }

    var bytes: [UInt8]
    var awaiting: Awaiting
    var reply: EventLoopPromise<MQTTPacket.Incoming>?
}

/// The one handler of an MQTT connection, on its event loop: writes requests, splits what the broker
/// sends into packets and completes the request each answers. The first failure (a TLS error, a
/// packet a publisher never asks for, the connection closing) fails every pending and later request.
final class MQTTSession: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = MQTTRequest
    typealias OutboundOut = ByteBuffer

    /// Where the subscriptions' messages go; finished when the connection ends.
    private let received: AsyncStream<MQTTMessage>.Continuation?

    init(received: AsyncStream<MQTTMessage>.Continuation? = nil) {
        self.received = received
    }

    private var buffered: [UInt8] = []
    private var pending: [MQTTRequest.Awaiting: EventLoopPromise<MQTTPacket.Incoming>] = [:]
    private(set) var failure: (any Error)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let failure {
            request.reply?.fail(failure)
            promise?.fail(failure)
            return
        }
        if let reply = request.reply, request.awaiting != .nothing {
            // A second request awaiting the same answer would take the first one's: never sent.
            if pending[request.awaiting] != nil {
                let error = MQTTError(.protocolViolation, "two requests await the same answer")
                reply.fail(error)
                promise?.fail(error)
                return
            }
            pending[request.awaiting] = reply
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        // A write fails after the cause (TLS failing its handshake fails the buffered CONNECT with
        // "closed"): the requester hears the first failure, the one that says what went wrong.
        let session = NIOLoopBound(self, eventLoop: context.eventLoop)
        let reply = request.reply
        written.futureResult.whenComplete { result in
            switch result {
            case .success: promise?.succeed()
            case .failure(let error):
                session.value.fail(error)
                let first = session.value.failure ?? error
                reply?.fail(first)
                promise?.fail(first)
            }
        }
        var buffer = context.channel.allocator.buffer(capacity: request.bytes.count)
        buffer.writeBytes(request.bytes)
        context.write(wrapOutboundOut(buffer), promise: written)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if let bytes = buffer.readBytes(length: buffer.readableBytes) { buffered.append(contentsOf: bytes) }
        do {
            while let (packet, used) = try MQTTPacket.decode(buffered) {
                buffered.removeFirst(used)
                answer(packet)
            }
        } catch {
            fail(error)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(MQTTError(.unreachable, "the broker closed the connection"))
        context.fireChannelInactive()
    }

    private func answer(_ packet: MQTTPacket.Incoming) {
        let key: MQTTRequest.Awaiting
        switch packet {
        case .connAck: key = .connAck
        case .pubAck(let id): key = .pubAck(id)
        case .pingResp: key = .pingResp
        case .subAck(let id, _): key = .subAck(id)
        case .publish(let message):
            received?.yield(message)
            return
        }
        // An answer nobody waits for (a late PUBACK after a deadline) is dropped.
        pending.removeValue(forKey: key)?.succeed(packet)
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        received?.finish()
        let waiting = pending
        pending = [:]
        for promise in waiting.values { promise.fail(failure ?? error) }
    }
}
