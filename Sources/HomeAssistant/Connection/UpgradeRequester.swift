import NIOCore
import NIOHTTP1

/// The server answered the upgrade request with an ordinary HTTP response.
struct UpgradeRefused: Error {
    let head: HTTPResponseHead
}

/// Sends the WebSocket upgrade request (`GET /api/websocket`) once connected, and fails the opening
/// when the server answers anything but the upgrade (removed once the upgrade succeeds).
final class UpgradeRequester: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let path: String
    private let failure: EventLoopPromise<WebSocketChannel>
    private var sent = false

    init(host: String, path: String, failure: EventLoopPromise<WebSocketChannel>) {
        self.host = host
        self.path = path
        self.failure = failure
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A successful upgrade never reaches this handler: any response here is a refusal.
        switch unwrapInboundIn(data) {
        case .head(let head): failure.fail(UpgradeRefused(head: head))
        case .body: break
        case .end: context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failure.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failure.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
