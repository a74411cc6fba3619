import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// One client connection seen as an async byte stream with deadlines and backpressure.
///
/// The emulated services are sequential protocols (usbmuxd, lockdown, AFC, GDB…) whose framing
/// changes mid-connection: usbmuxd `Connect` turns the socket into a raw tunnel, and lockdown
/// `StartSession` switches the same socket to TLS (PROTOCOL.md §1.7, §2.6). Keeping the bytes in one
/// buffer owned here lets a TLS handler be inserted at the pipeline head while any bytes already read
/// are handed back to it (PLATFORM-NOTES.md §1: dropped leftovers make the handshake hang).
final class ByteStream: Sendable {
    let channel: Channel
    private let state: NIOLockedValueBox<State>
    private let bridge: ByteStreamHandler
    /// The device link this connection rides on (throttle fault); nil = unlimited.
    private let link: NIOLockedValueBox<NIOLockedValueBox<LinkThrottle?>?>
    /// Accepted at a network twin's own address (Wi-Fi), not tunnelled through usbmuxd.
    let overNetwork: Bool

    /// Stop reading from the socket once this much is buffered (the client then blocks in send()).
    static let highWaterMark = 4 * 1024 * 1024

    struct State {
        var buffer = ChunkQueue()
        var isClosed = false
        var closeReason: String?
        var waiter: Waiter?
        var nextWaiterID = 0
        var readIsHeld = false
    }

    struct Waiter {
        let id: Int
        let minimum: Int
        let continuation: CheckedContinuation<Void, Error>
    }

    /// Installs the bridge handler on `channel` (must be called on its event loop).
    init(channel: Channel, overNetwork: Bool = false) throws {
        self.channel = channel
        self.overNetwork = overNetwork
        let state = NIOLockedValueBox(State())
        self.state = state
        self.bridge = ByteStreamHandler(state: state)
        self.link = NIOLockedValueBox(nil)
        try channel.pipeline.syncOperations.addHandler(bridge)
    }

    /// Makes reads and writes share the device's link limiter from now on.
    func attachLink(_ deviceLink: NIOLockedValueBox<LinkThrottle?>) {
        link.withLockedValue { $0 = deviceLink }
    }

    private var throttle: LinkThrottle? {
        link.withLockedValue { $0 }?.withLockedValue { $0 }
    }

    var description: String { "\(channel.remoteAddress?.description ?? "client")" }

    // MARK: reading

    /// Reads exactly `count` bytes, or throws when the peer closes or the deadline passes.
    func read(exactly count: Int, timeout: TimeAmount) async throws -> ByteBuffer {
        try await waitFor(minimum: count, timeout: timeout)
        let slice = state.withLockedValue { $0.buffer.read(exactly: count) }
        await afterConsuming(count)
        return slice
    }

    /// Reads exactly `count` bytes as the buffers they arrived in, without copying them into one:
    /// one wake-up (and one pass through the link throttle) for a whole AFC write, not one per read.
    func readChunks(exactly count: Int, timeout: TimeAmount) async throws -> [ByteBuffer] {
        try await waitFor(minimum: count, timeout: timeout)
        let chunks = state.withLockedValue { $0.buffer.readChunks(exactly: count) }
        await afterConsuming(count)
        return chunks
    }

    /// Reads exactly `count` bytes however long the peer stays quiet (an idle tunnel or channel):
    /// waits in rounds of an hour; throws only when the peer closes or the connection breaks.
    func readAfterIdle(exactly count: Int) async throws -> ByteBuffer {
        while true {
            do {
                return try await read(exactly: count, timeout: .seconds(3600))
            } catch TransportError.timeout {
                continue
            }
        }
    }

    /// Reads between 1 and `maximum` bytes: whatever is buffered, waiting for at least one byte.
    func read(upTo maximum: Int, timeout: TimeAmount) async throws -> ByteBuffer {
        try await waitFor(minimum: 1, timeout: timeout)
        let slice = state.withLockedValue { $0.buffer.read(upTo: maximum) }
        await afterConsuming(slice.readableBytes)
        return slice
    }

    /// Reads a big-endian 32-bit length and that many bytes (lockdown "property list service" framing).
    func readLengthPrefixed(maximum: Int, timeout: TimeAmount) async throws -> ByteBuffer {
        var header = try await read(exactly: 4, timeout: timeout)
        let length = Int(header.readInteger(endianness: .big, as: UInt32.self)!)
        guard length <= maximum else {
            throw TransportError.protocolViolation(
                "a \(length)-byte message exceeds the \(maximum)-byte limit")
        }
        return try await read(exactly: length, timeout: timeout)
    }

    private func waitFor(minimum: Int, timeout: TimeAmount) async throws {
        while true {
            let outcome: WaitOutcome = state.withLockedValue { state in
                if state.buffer.readableBytes >= minimum { return .ready }
                if state.isClosed { return .closed(state.closeReason) }
                return .mustWait
            }
            switch outcome {
            case .ready: return
            case .closed(let reason): throw TransportError.closed(reason ?? "the peer closed the connection")
            case .mustWait: break
            }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                let install: Int? = state.withLockedValue { state in
                    if state.buffer.readableBytes >= minimum || state.isClosed { return nil }
                    state.nextWaiterID += 1
                    state.waiter = Waiter(
                        id: state.nextWaiterID, minimum: minimum, continuation: continuation)
                    return state.nextWaiterID
                }
                guard let waiterID = install else {
                    continuation.resume()
                    return
                }
                // Ask for more bytes even if the buffer is above the high-water mark: this reader
                // needs them to make progress (e.g. a 1 MiB AFC packet).
                releaseHeldRead(force: true)
                channel.eventLoop.scheduleTask(in: timeout) { [state] in
                    let expired: Waiter? = state.withLockedValue { state in
                        guard let waiter = state.waiter, waiter.id == waiterID else { return nil }
                        state.waiter = nil
                        return waiter
                    }
                    expired?.continuation.resume(throwing: TransportError.timeout(timeout))
                }
            }
        }
    }

    private enum WaitOutcome {
        case ready
        case mustWait
        case closed(String?)
    }

    private func afterConsuming(_ count: Int) async {
        releaseHeldRead(force: false)
        if let throttle {
            await throttle.consume(bytes: count)
        }
    }

    private func releaseHeldRead(force: Bool) {
        let release = state.withLockedValue { state -> Bool in
            guard state.readIsHeld else { return false }
            guard force || state.buffer.readableBytes < Self.highWaterMark / 2 else { return false }
            state.readIsHeld = false
            return true
        }
        if release { channel.read() }
    }

    // MARK: writing

    /// Writes and flushes; returns once the bytes reached the socket.
    func write(_ buffer: ByteBuffer) async throws {
        if let throttle {
            await throttle.consume(bytes: buffer.readableBytes)
        }
        do {
            try await channel.writeAndFlush(buffer).get()
        } catch {
            throw TransportError.closed("writing failed: \(error)")
        }
    }

    func write(_ bytes: some Sequence<UInt8>) async throws {
        try await write(ByteBuffer(bytes: bytes))
    }

    /// Writes without waiting (used for usbmuxd events from the registry).
    func writeWithoutWaiting(_ buffer: ByteBuffer) {
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Writes a big-endian 32-bit length plus the payload.
    func writeLengthPrefixed(_ payload: Data) async throws {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(payload.count + 4)
        buffer.writeInteger(UInt32(payload.count), endianness: .big)
        buffer.writeBytes(payload)
        try await write(buffer)
    }

    // MARK: TLS and lifetime

    /// Starts a server-side TLS session on this connection, after everything written so far.
    ///
    /// Bytes already buffered (a pipelined ClientHello) are fired again from the pipeline head so
    /// they pass through the new TLS handler instead of being lost.
    func startServerTLS(_ context: NIOSSLContext) async throws {
        let state = self.state
        try await channel.eventLoop.submit { [channel] in
            let leftover: ByteBuffer = state.withLockedValue { state in
                state.buffer.read(exactly: state.buffer.readableBytes)
            }
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLServerHandler(context: context), position: .first)
            if leftover.readableBytes > 0 {
                channel.pipeline.fireChannelRead(leftover)
            }
        }.get()
    }

    /// True once the peer closed or the connection failed.
    var isClosed: Bool { state.withLockedValue { $0.isClosed } }

    /// Whether the peer has sent bytes not read yet (a client that spoke while the device waited).
    var hasUnreadBytes: Bool { state.withLockedValue { $0.buffer.readableBytes > 0 } }

    /// Closes the connection (idempotent).
    func close() {
        channel.close(promise: nil)
    }

    /// Resolves when the connection is closed (the log relays, which never read, learn so).
    func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}
