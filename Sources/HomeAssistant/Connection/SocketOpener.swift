import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// Opens the WebSocket to `/api/websocket` (TCP, TLS, upgrade) within a deadline; what arrives on
/// it comes out of one ordered stream of frames (``SocketReader`` feeds it).
enum SocketOpener {
    /// How many frames one message may arrive in. HA sends each message as one frame; a proxy may
    /// split it, but not into more pieces than this (each piece costs memory even when empty).
    static let maxFragments = 1 << 16

    static func open(_ options: ClientOptions) async throws -> (WebSocketChannel, AsyncStream<SocketFrame>) {
        let server = options.server
        let tls =
            server.isSecure
            ? try NIOSSLContext(
                configuration: TLSSetup.configuration(caFile: options.caFile, server: server.baseURL))
            : nil
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let (frames, continuation) = AsyncStream.makeStream(of: SocketFrame.self)
        let socketPromise = loop.makePromise(of: WebSocketChannel.self)
        let maxMessageBytes = options.maxFrameSize
        let host = server.host
        let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maxMessageBytes) { channel, _ in
            // After NIO's frame decoder, encoder and protocol error handler, which the upgrader adds.
            channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                // Without a limit, a server that never sends the last frame of a message would grow
                // this process until the system kills it.
                try pipeline.addHandler(
                    NIOWebSocketFrameAggregator(
                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: maxFragments,
                        maxAccumulatedFrameSize: maxMessageBytes))
                try pipeline.addHandler(SocketReader(maxMessageBytes: maxMessageBytes, frames: continuation))
                socketPromise.succeed(WebSocketChannel(channel))
            }
        }
        let bootstrap = ClientBootstrap(group: loop)
            // TCP_NODELAY at the TCP level. (`socketOption(.tcp_nodelay)` is SOL_SOCKET with option 1:
            // SO_DEBUG, which only root may set, so an ordinary user could not connect at all.)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(options.connectTimeout.timeAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(try TLSSetup.clientHandler(tls, host: host)) }
                    let requester = UpgradeRequester(
                        host: server.hostHeader, path: server.webSocketPath, failure: socketPromise)
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
                }
            }
        // Whether TCP got through: a server that accepts and then says nothing is stalled, not away.
        let tcpConnected = NIOLockedValueBox(false)
        bootstrap.connect(host: host, port: server.port).whenComplete { result in
            switch result {
            case .success(let channel):
                tcpConnected.withLockedValue { $0 = true }
                // A refused upgrade or the deadline: the half-open connection is not left behind.
                socketPromise.futureResult.whenFailure { _ in channel.close(promise: nil) }
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
                (waiter: CheckedContinuation<WebSocketChannel, any Error>) in
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
                        socketPromise.fail(CancellationError())
                    }
                }
                socketPromise.futureResult.whenComplete { result in
                    if claim() {
                        timer.cancel()
                        waiter.resume(with: result)
                    } else if case .success(let late) = result {
                        // The deadline passed first: nobody will read this socket.
                        late.close(code: .goingAway)
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
        if let failure = error as? HTTPExchange.Failure, failure == .closedEarly {
            return "the server closed the connection before it finished answering"
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
