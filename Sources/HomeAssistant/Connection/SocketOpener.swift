import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import WebSocketKit

/// Opens the WebSocket to `/api/websocket` (TCP, TLS, upgrade) within a deadline and turns its
/// callbacks into one ordered stream of frames.
enum SocketOpener {
    static func open(_ options: ClientOptions) async throws -> (WebSocket, AsyncStream<SocketFrame>) {
        let server = options.server
        let tls =
            server.isSecure ? try TLSSetup.configuration(caFile: options.caFile, server: server.baseURL) : nil
        let configuration = WebSocketClient.Configuration(
            tlsConfiguration: tls, maxFrameSize: options.maxFrameSize)
        let group = MultiThreadedEventLoopGroup.singleton
        let client = WebSocketClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        let (frames, continuation) = AsyncStream.makeStream(of: SocketFrame.self)
        let loop = group.any()
        let socketPromise = loop.makePromise(of: WebSocket.self)
        let upgrade = client.connect(
            scheme: server.isSecure ? "wss" : "ws", host: server.host, port: server.port,
            path: server.webSocketPath
        ) { socket in
            // Runs on the channel's event loop, which the callbacks' loop-bound boxes require.
            socket.onText { _, text in continuation.yield(.text(Data(text.utf8))) }
            socket.onClose.whenComplete { _ in
                continuation.yield(.closed(code: socket.closeCode.map { "\($0)" } ?? "none"))
                continuation.finish()
            }
            socket.pingInterval = .seconds(20)
            socketPromise.succeed(socket)
        }
        upgrade.whenFailure { socketPromise.fail($0) }

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
                        waiter.resume(
                            throwing: HomeAssistantError.unreachable(
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
        if case WebSocketClient.Error.invalidResponseStatus(let head) = error {
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
