import Foundation
import NIOCore
import NIOFoundationCompat
import NIOWebSocket

/// Last in an upgraded WebSocket's pipeline, after NIO's frame decoder (which refuses a frame over
/// the size limit) and `NIOWebSocketFrameAggregator` (which reassembles a fragmented message).
/// Hands each text message on in arrival order, answers pings, pings a quiet server, and does the
/// closing handshake from either side. A message over the limit, or in too many pieces, ends the
/// connection at once with the reason, instead of waiting for a server that keeps sending.
final class SocketReader: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The outbound event ``WebSocketChannel/close(code:)`` sends down the pipeline.
    struct Close: Sendable {
        let code: WebSocketErrorCode
    }

    /// How long the server has to answer a close frame before the TCP connection is closed anyway.
    static let closeGrace: TimeAmount = .seconds(2)
    /// A ping this often; a server that answered nothing since the previous one is gone (a dropped
    /// link sends no FIN, and HA's own heartbeat only guards its side).
    static let pingInterval: TimeAmount = .seconds(20)

    private let maxMessageBytes: Int
    private let frames: AsyncStream<SocketFrame>.Continuation
    private var closeCode: WebSocketErrorCode?
    private var closeSent = false
    private var heardSincePing = true
    private var pinger: RepeatedTask?
    private var reported = false

    init(maxMessageBytes: Int, frames: AsyncStream<SocketFrame>.Continuation) {
        self.maxMessageBytes = maxMessageBytes
        self.frames = frames
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = context.loopBound
        pinger = context.eventLoop.scheduleRepeatedTask(
            initialDelay: Self.pingInterval, delay: Self.pingInterval
        ) { _ in
            handler.value.pingOrGiveUp(bound.value)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pinger?.cancel()
    }

    private func pingOrGiveUp(_ context: ChannelHandlerContext) {
        guard heardSincePing else {
            context.close(promise: nil)
            return
        }
        heardSincePing = false
        send(.ping, context.channel.allocator.buffer(capacity: 0), context)
    }

    private func send(_ opcode: WebSocketOpcode, _ data: ByteBuffer, _ context: ChannelHandlerContext) {
        let frame = WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: data)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        heardSincePing = true
        switch frame.opcode {
        case .text:
            frames.yield(.text(Data(buffer: frame.unmaskedData)))
        case .ping:
            if !closeSent { send(.pong, frame.unmaskedData, context) }
        case .connectionClose:
            var payload = frame.unmaskedData
            closeCode = payload.readWebSocketErrorCode()
            guard !closeSent else {
                // The answer to our close: the handshake is complete.
                context.close(promise: nil)
                return
            }
            // The server closes: echo its code, then end the connection.
            closeSent = true
            var echo = context.channel.allocator.buffer(capacity: 2)
            if let closeCode { echo.write(webSocketErrorCode: closeCode) }
            let bound = context.loopBound
            let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo)
            context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in bound.value.close(promise: nil)
            }
        default:
            // Binary messages are not part of HA's API; pongs only prove the server is there.
            break
        }
    }

    func triggerUserOutboundEvent(
        context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?
    ) {
        guard let close = event as? Close else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        guard !closeSent else { return }
        closeSent = true
        var payload = context.channel.allocator.buffer(capacity: 2)
        payload.write(webSocketErrorCode: close.code)
        send(.connectionClose, payload, context)
        let bound = context.loopBound
        context.eventLoop.scheduleTask(in: Self.closeGrace) { bound.value.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let limit = maxMessageBytes.byteCountText
        let reason: String?
        switch error {
        case NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
            NIOWebSocketError.invalidFrameLength:
            reason = "it sent a message larger than \(limit), the most hadeploy reads in one message"
        case NIOWebSocketFrameAggregator.Error.tooManyFragments:
            reason =
                "it sent a message in more than \(SocketOpener.maxFragments) pieces without finishing it "
                + "(the most hadeploy accepts)"
        case is NIOWebSocketFrameAggregator.Error, is NIOWebSocketError:
            reason = "it broke the WebSocket protocol (\(error))"
        default:
            reason = nil
        }
        if let reason, !reported {
            reported = true
            frames.yield(.failed(reason))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        pinger?.cancel()
        frames.yield(.closed(code: closeCode.map { "\($0)" } ?? "none"))
        frames.finish()
        context.fireChannelInactive()
    }
}
