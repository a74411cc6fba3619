import NIOConcurrencyHelpers

/// Device-wide notifications (`com.apple.mobile.application_installed`, …) relayed to
/// notification_proxy clients that observe them (`ideviceinstaller -w`, PROTOCOL.md §9).
final class DeviceNotificationCenter: Sendable {
    private let observers = NIOLockedValueBox<[Int: AsyncStream<String>.Continuation]>([:])
    private let nextID = NIOLockedValueBox(0)

    /// A stream of every notification posted from now on; finish it with `remove`.
    func observe() -> (id: Int, stream: AsyncStream<String>) {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = nextID.withLockedValue { value in
            value += 1
            return value
        }
        observers.withLockedValue { $0[id] = continuation }
        return (id, stream)
    }

    func remove(_ id: Int) {
        observers.withLockedValue { $0.removeValue(forKey: id) }?.finish()
    }

    func post(_ name: String) {
        for continuation in observers.withLockedValue({ Array($0.values) }) { continuation.yield(name) }
    }
}
