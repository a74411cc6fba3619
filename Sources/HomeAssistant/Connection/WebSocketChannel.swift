import NIOCore
import NIOWebSocket

/// An open WebSocket to Home Assistant, as the connection uses it: text messages out, and a close.
/// What arrives is read by ``SocketReader``, which owns the closing handshake.
final class WebSocketChannel: Sendable {
    private let channel: any Channel

    init(_ channel: any Channel) {
        self.channel = channel
    }

    /// Sends one text message as a single frame, masked as RFC 6455 requires of a client.
    func send(_ text: String) {
        let frame = WebSocketFrame(
            fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text))
        channel.writeAndFlush(frame, promise: nil)
    }

    /// Starts the closing handshake (a close frame with `code`); the connection ends when the
    /// server answers it or after ``SocketReader/closeGrace``, whichever is first.
    func close(code: WebSocketErrorCode = .normalClosure) {
        channel.triggerUserOutboundEvent(SocketReader.Close(code: code), promise: nil)
    }
}
