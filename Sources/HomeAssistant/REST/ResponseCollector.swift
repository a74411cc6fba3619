import NIOCore
import NIOHTTP1

/// Collects one response (NIO's decoder has already undone chunked transfer coding) into memory,
/// up to a limit, and completes `answer` with it; a connection that ends first fails it.
final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let limit: Int
    private let answer: EventLoopPromise<HTTPResponse>
    private var status: UInt?
    private var body: ByteBuffer?

    init(limit: Int, answer: EventLoopPromise<HTTPResponse>) {
        self.limit = limit
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx answers (100 Continue) precede the real one.
            guard head.status.code >= 200 else { return }
            status = head.status.code
            body = context.channel.allocator.buffer(capacity: 0)
            if let declared = head.headers.first(name: "Content-Length").flatMap(Int.init), declared > limit {
                tooLarge(context)
            }
        case .body(var part):
            guard status != nil, body != nil else { return }
            if body!.readableBytes + part.readableBytes > limit {
                body = nil
                tooLarge(context)
                return
            }
            body!.writeBuffer(&part)
        case .end:
            guard let status, let body else { return }
            answer.succeed(HTTPResponse(status: status, body: body))
        }
    }

    private func tooLarge(_ context: ChannelHandlerContext) {
        answer.fail(HTTPExchange.Failure.tooLarge(limit: limit))
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer.fail(HTTPExchange.Failure.closedEarly)
        context.fireChannelInactive()
    }
}
