import HADeployCore
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The service end of a tunnelled TCP connection: a Unix socket pair. The TCP connection drives one
/// end on the tunnel's event loop; the other end is an ordinary ``ByteStream``, so the services that
/// run over usbmuxd (lockdownd, AFC, the image mounter…) run unchanged behind RSD.
final class TunnelAppBridge: @unchecked Sendable {
    let channel: Channel
    private weak var connection: TunnelTCPConnection?
    private var lastWrite: EventLoopFuture<Void>?
    private var outputClosed = false

    private init(channel: Channel, connection: TunnelTCPConnection) {
        self.channel = channel
        self.connection = connection
    }

    static func open(
        for connection: TunnelTCPConnection, on loop: EventLoop, accept: @escaping TunnelNetwork.Accept
    ) {
        var descriptors: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, PlatformCalls.streamSocketCloseOnExec, 0, &descriptors) == 0 else {
            connection.serviceCouldNotStart(TransportError.closed("socketpair failed: errno \(errno)"))
            return
        }
        let serviceEnd = descriptors[1]
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let stream = try ByteStream(channel: channel)
                    Task {
                        await accept(stream)
                        stream.close()
                    }
                }
            }
            .withConnectedSocket(serviceEnd)
            .whenFailure { _ in PlatformCalls.closeDescriptor(serviceEnd) }
        ClientBootstrap(group: loop)
            .channelOption(.autoRead, value: false)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TunnelAppHandler(connection: connection))
                }
            }
            .withConnectedSocket(descriptors[0])
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    connection.serviceAttached(TunnelAppBridge(channel: channel, connection: connection))
                case .failure(let error):
                    connection.serviceCouldNotStart(error)
                }
            }
    }

    /// Bytes from the host, in order; the connection's receive window counts them until written.
    func write(_ buffer: ByteBuffer) {
        guard !outputClosed else { return }
        let count = buffer.readableBytes
        let future = channel.writeAndFlush(buffer)
        lastWrite = future
        future.whenComplete { [weak connection] _ in connection?.wroteTowardService(count) }
    }

    /// The host's FIN: the service reads end of stream after the bytes before it.
    func closeOutput() {
        guard !outputClosed else { return }
        outputClosed = true
        let channel = self.channel
        if let lastWrite {
            lastWrite.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        } else {
            channel.close(mode: .output, promise: nil)
        }
    }

    /// Reads once more from the service (reads are driven by the send buffer's room).
    func read() {
        channel.read()
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// Our end of the socket pair: what the service writes goes to the host.
private final class TunnelAppHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private weak var connection: TunnelTCPConnection?

    init(connection: TunnelTCPConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection?.serviceSent(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if connection?.wantsServiceBytes ?? false { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            connection?.serviceFinished()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection?.serviceFinished()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
