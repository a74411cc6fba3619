import NIOConcurrencyHelpers

/// Hands each value to every listener of the moment: like a device relaying notifications and log
/// lines, a listener sees only what is sent while it listens. A slow listener keeps the newest
/// `buffer` values.
final class Broadcast<Element: Sendable>: Sendable {
    private let buffer: Int
    private let listeners = NIOLockedValueBox<(next: Int, open: [Int: AsyncStream<Element>.Continuation])>(
        (0, [:]))

    init(buffer: Int) {
        self.buffer = buffer
    }

    /// Every value sent from now on; finish it with ``stopListening(_:)``.
    func listen() -> (id: Int, stream: AsyncStream<Element>) {
        let (stream, continuation) = AsyncStream<Element>.makeStream(
            bufferingPolicy: .bufferingNewest(buffer))
        let id = listeners.withLockedValue { listeners in
            listeners.next += 1
            listeners.open[listeners.next] = continuation
            return listeners.next
        }
        return (id, stream)
    }

    func stopListening(_ id: Int) {
        listeners.withLockedValue { $0.open.removeValue(forKey: id) }?.finish()
    }

    /// How many listen now.
    var listenerCount: Int { listeners.withLockedValue { $0.open.count } }

    func send(_ value: Element) {
        for continuation in listeners.withLockedValue({ Array($0.open.values) }) { continuation.yield(value) }
    }
}
