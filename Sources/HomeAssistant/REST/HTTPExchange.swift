import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP/1.1 request and its response, on a connection of its own that is closed afterwards
/// (`Connection: close`). Home Assistant is on loopback or the LAN, where a new connection per
/// call costs a millisecond or two; in exchange there is no pool whose idle connections a server
/// may drop under it. Redirects are not followed: a 3xx is returned as it is.
struct HTTPExchange: Sendable {
    /// Why an exchange ended without a response; anything else thrown is NIO's own error.
    enum Failure: Error, Equatable {
        /// The deadline passed (connecting, sending, or waiting for the last byte).
        case deadline
        /// The body grew beyond `maxBodyBytes`.
        case tooLarge(limit: Int)
        /// The connection closed before the response was complete.
        case closedEarly
    }

    let server: ServerAddress
    /// `nil` for plain http.
    let tls: NIOSSLContext?
    let connectTimeout: Duration
    /// The most a response body may hold (read into memory whole).
    let maxBodyBytes: Int

    /// Sends `method path` with `headers` (Host, Content-Length and Connection are added) and
    /// returns the status and the whole body, all within `deadline`.
    func perform(
        _ method: HTTPMethod, _ path: String, headers: HTTPHeaders, body: ByteBuffer?, deadline: Duration
    ) async throws -> (status: UInt, body: ByteBuffer) {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let answer = loop.makePromise(of: HTTPResponse.self)
        let limit = maxBodyBytes
        let tls = self.tls
        let host = server.host
        let bootstrap = ClientBootstrap(group: loop)
            // TCP_NODELAY at the TCP level. (`socketOption(.tcp_nodelay)` is SOL_SOCKET with option 1:
            // SO_DEBUG, which only root may set, so an ordinary user could not connect at all.)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout.timeAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(try TLSSetup.clientHandler(tls, host: host)) }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(ResponseCollector(limit: limit, answer: answer))
                }
            }
        let timer = loop.scheduleTask(in: deadline.timeAmount) { answer.fail(Failure.deadline) }
        var head = HTTPRequestHead(
            version: .http1_1, method: method,
            uri: server.pathPrefix + (path.hasPrefix("/") ? String(path.dropFirst()) : path))
        head.headers = headers
        head.headers.replaceOrAdd(name: "Host", value: server.hostHeader)
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        if let body { head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.readableBytes)") }
        let request = head
        bootstrap.connect(host: host, port: server.port).whenComplete { result in
            switch result {
            case .failure(let error):
                answer.fail(error)
            case .success(let channel):
                // Closed once answered, failed or out of time, whichever comes first.
                answer.futureResult.whenComplete { _ in channel.close(promise: nil) }
                channel.write(HTTPClientRequestPart.head(request), promise: nil)
                if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { answer.fail($0) }
            }
        }
        defer { timer.cancel() }
        let response = try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            answer.fail(CancellationError())
        }
        return (response.status, response.body)
    }
}

/// A complete response as ``ResponseCollector`` assembled it.
struct HTTPResponse: Sendable {
    let status: UInt
    let body: ByteBuffer
}
