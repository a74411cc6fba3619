import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The pipeline end of a `ByteStream`: buffers inbound bytes and holds socket reads when full.
final class ByteStreamHandler: ChannelDuplexHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let state: NIOLockedValueBox<ByteStream.State>

    init(state: NIOLockedValueBox<ByteStream.State>) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let incoming = unwrapInboundIn(data)
        let ready: ByteStream.Waiter? = state.withLockedValue { state in
            state.buffer.append(incoming)
            guard let waiter = state.waiter, state.buffer.readableBytes >= waiter.minimum else { return nil }
            state.waiter = nil
            return waiter
        }
        ready?.continuation.resume()
    }

    func read(context: ChannelHandlerContext) {
        let hold = state.withLockedValue { state -> Bool in
            if state.buffer.readableBytes >= ByteStream.highWaterMark && state.waiter == nil {
                state.readIsHeld = true
                return true
            }
            return false
        }
        if !hold { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        markClosed(reason: "the peer closed the connection")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // NIOSSL reports a close without close_notify as `uncleanShutdown`; the libimobiledevice
        // clients do exactly that after StopSession, so it is an ordinary end of stream.
        if let sslError = error as? NIOSSLError, case .uncleanShutdown = sslError {
            markClosed(reason: "the peer closed the connection")
        } else {
            markClosed(reason: "connection error: \(error)")
        }
        context.close(promise: nil)
    }

    private func markClosed(reason: String) {
        let waiter: ByteStream.Waiter? = state.withLockedValue { state in
            if !state.isClosed {
                state.isClosed = true
                state.closeReason = reason
            }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.continuation.resume()
    }
}
