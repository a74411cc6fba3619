import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import WebSocketKit

/// Opens the WebSocket to `/api/websocket` (TCP, TLS, upgrade) within a deadline and turns its
/// callbacks into one ordered stream of frames.
enum SocketOpener {
    /// How many frames one message may arrive in. HA sends each message as one frame; a proxy may
    /// split it, but not into more pieces than this (each piece costs memory even when empty).
    static let maxFragments = 1 << 16

    static func open(_ options: ClientOptions) async throws -> (WebSocket, AsyncStream<SocketFrame>) {
        let server = options.server
        let tls =
            server.isSecure ? try TLSSetup.configuration(caFile: options.caFile, server: server.baseURL) : nil
        // websocket-kit assembles a message from its frames without a limit unless told: a server
        // that never sends the last frame would grow this process until the system kills it.
        var socketConfiguration = WebSocket.Configuration()
        socketConfiguration.maxAccumulatedFrameSize = options.maxFrameSize
        socketConfiguration.maxAccumulatedFrameCount = maxFragments
        let limits = socketConfiguration
        let group = MultiThreadedEventLoopGroup.singleton
        let (frames, continuation) = AsyncStream.makeStream(of: SocketFrame.self)
        let loop = group.any()
        let socketPromise = loop.makePromise(of: WebSocket.self)
        let onUpgrade: @Sendable (WebSocket) -> Void = { socket in
            // Runs on the channel's event loop, which the callbacks' loop-bound boxes require.
            socket.onText { _, text in continuation.yield(.text(Data(text.utf8))) }
            socket.onClose.whenComplete { _ in
                continuation.yield(.closed(code: socket.closeCode.map { "\($0)" } ?? "none"))
                continuation.finish()
            }
            socket.pingInterval = .seconds(20)
            socketPromise.succeed(socket)
        }
        let maxFrameSize = options.maxFrameSize
        let host = server.host
        let hostHeader = server.port == (server.isSecure ? 443 : 80) ? host : "\(host):\(server.port)"
        let bootstrap = ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(options.connectTimeout.timeAmount)
            .channelInitializer { channel in
                do {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        let context = try NIOSSLContext(configuration: tls)
                        let handler: NIOSSLClientHandler
                        do {
                            handler = try NIOSSLClientHandler(context: context, serverHostname: host)
                        } catch let error as NIOSSLExtraError where error == .cannotUseIPAddressInSNI {
                            handler = try NIOSSLClientHandler(context: context, serverHostname: nil)
                        }
                        try pipeline.addHandler(handler)
                    }
                    let requester = UpgradeRequester(
                        host: hostHeader, path: server.webSocketPath, failure: socketPromise)
                    let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maxFrameSize) { channel, _ in
                        WebSocket.client(on: channel, config: limits) { socket in
                            // After websocket-kit's handlers: sees the errors they pass on.
                            try? channel.pipeline.syncOperations.addHandler(
                                OversizeGuard(maxFrameSize: maxFrameSize) { continuation.yield(.failed($0)) })
                            onUpgrade(socket)
                        }
                    }
                    let requesterBox = NIOLoopBound(requester, eventLoop: channel.eventLoop)
                    try pipeline.addHTTPClientHandlers(
                        leftOverBytesStrategy: .forwardBytes,
                        withClientUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { _ in
                                channel.pipeline.syncOperations.removeHandler(
                                    requesterBox.value, promise: nil)
                            }
                        ))
                    try pipeline.addHandler(requester)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        // Whether TCP got through: a server that accepts and then says nothing is stalled, not away.
        let tcpConnected = NIOLockedValueBox(false)
        bootstrap.connect(host: host, port: server.port).whenComplete { result in
            switch result {
            case .success: tcpConnected.withLockedValue { $0 = true }
            case .failure(let error): socketPromise.fail(error)
            }
        }

        let decided = NIOLockedValueBox(false)
        let claim: @Sendable () -> Bool = {
            decided.withLockedValue { wasDecided in
                defer { wasDecided = true }
                return !wasDecided
            }
        }
        do {
            let socket = try await withCheckedThrowingContinuation {
                (waiter: CheckedContinuation<WebSocket, any Error>) in
                let timer = loop.scheduleTask(in: options.connectTimeout.timeAmount) {
                    if claim() {
                        let stalled = tcpConnected.withLockedValue { $0 }
                        waiter.resume(
                            throwing: stalled
                                ? HomeAssistantError(
                                    .timedOut, server: server.baseURL,
                                    message:
                                        "Home Assistant at \(server.baseURL) accepted the connection but did "
                                        + "not answer the WebSocket upgrade within "
                                        + "\(options.connectTimeout.secondsText): it is stalled (still starting, "
                                        + "overloaded, or stuck). Check its log or restart it, then try again"
                                )
                                : HomeAssistantError.unreachable(
                                    server.baseURL, tried: server.webSocketURL,
                                    "no WebSocket connection within \(options.connectTimeout.secondsText)"))
                    }
                }
                socketPromise.futureResult.whenComplete { result in
                    if claim() {
                        timer.cancel()
                        waiter.resume(with: result)
                    } else if case .success(let late) = result {
                        // The deadline passed first: nobody will read this socket.
                        late.close(code: .goingAway, promise: nil)
                    }
                }
            }
            return (socket, frames)
        } catch let error as HomeAssistantError {
            continuation.finish()
            throw error
        } catch {
            continuation.finish()
            throw HomeAssistantError.unreachable(server.baseURL, tried: server.webSocketURL, describe(error))
        }
    }

    /// NIO's errors, in words a user can act on.
    static func describe(_ error: any Error) -> String {
        if let refused = error as? UpgradeRefused {
            let head = refused.head
            return "the server answered HTTP \(head.status.code) \(head.status.reasonPhrase) instead of "
                + "upgrading to a WebSocket: is this Home Assistant, and is the URL's path prefix right?"
        }
        let text = "\(error)"
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("handshakeFailed") {
            return "the TLS handshake failed (\(text)): if the server uses a self-signed certificate or a "
                + "private CA, pass that certificate as the CA file"
        }
        // NIO reports a failed connect as `NIOConnectionError(... SingleConnectionFailure(... errno: N))`
        // per address tried: the errno is what a user can act on.
        for (needle, words) in socketFailures where text.contains(needle) { return words }
        return text
    }

    /// Socket errors (as NIO words them) and what they mean for a Home Assistant URL.
    static let socketFailures: [(String, String)] = [
        (
            "errno: 111",
            "the connection was refused: nothing listens at that address (is Home Assistant running?)"
        ),
        (
            "Connection refused",
            "the connection was refused: nothing listens at that address (is Home Assistant running?)"
        ),
        ("errno: 104", "the connection was reset by the server"),
        ("Connection reset", "the connection was reset by the server"),
        ("errno: 113", "no route to the host (is it on this network?)"),
        ("errno: 101", "the network is unreachable"),
        ("errno: 110", "the connection timed out (no answer from the host)"),
        ("connectTimeout", "the connection timed out (no answer from the host)"),
        ("errno: 32", "the server closed the connection (broken pipe)"),
        ("uncleanShutdown", "the server closed the connection mid-answer"),
        ("remoteConnectionClosed", "the server closed the connection mid-answer"),
    ]
}

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
    private let failure: EventLoopPromise<WebSocket>
    private var sent = false

    init(host: String, path: String, failure: EventLoopPromise<WebSocket>) {
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

/// Last in the pipeline once upgraded: a message larger than the limit (or split into too many
/// frames) ends the connection at once, with the reason, instead of waiting for a server that keeps
/// sending to close it.
final class OversizeGuard: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame

    private let maxFrameSize: Int
    private let report: @Sendable (String) -> Void
    private var reported = false

    init(maxFrameSize: Int, report: @escaping @Sendable (String) -> Void) {
        self.maxFrameSize = maxFrameSize
        self.report = report
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let limit = Self.megabytes(maxFrameSize)
        let reason: String?
        switch error {
        case NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
            NIOWebSocketError.invalidFrameLength:
            reason = "it sent a message larger than \(limit), the most hadeploy reads in one message"
        case NIOWebSocketFrameAggregator.Error.tooManyFragments:
            reason =
                "it sent a message in more than \(SocketOpener.maxFragments) pieces without finishing it "
                + "(the most hadeploy accepts)"
        case is NIOWebSocketFrameAggregator.Error:
            reason = "it broke the WebSocket protocol (\(error))"
        default:
            reason = nil
        }
        if let reason, !reported {
            reported = true
            report(reason)
        }
        context.close(promise: nil)
    }

    static func megabytes(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
