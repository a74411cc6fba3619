import NIOConcurrencyHelpers

/// Device-wide notifications (`com.apple.mobile.application_installed`, …) relayed to
/// notification_proxy clients that observe them (`ideviceinstaller -w`, PROTOCOL.md §9).
final class DeviceNotificationCenter: Sendable {
    private let observers = Broadcast<String>(buffer: 64)
    /// The names each open relay asked for (`ObserveNotification`), by its `observe` id.
    private let registered = NIOLockedValueBox<[Int: Set<String>]>([:])

    /// A stream of every notification posted from now on; finish it with `remove`.
    func observe() -> (id: Int, stream: AsyncStream<String>) {
        observers.listen()
    }

    func remove(_ id: Int) {
        observers.stopListening(id)
        registered.withLockedValue { _ = $0.removeValue(forKey: id) }
    }

    /// Notes that the relay `id` observes `name`.
    func register(_ name: String, for id: Int) {
        registered.withLockedValue { _ = $0[id, default: []].insert(name) }
    }

    /// Every name some open relay observes.
    var observedNames: Set<String> {
        registered.withLockedValue { $0.values.reduce(into: []) { $0.formUnion($1) } }
    }

    func post(_ name: String) {
        observers.send(name)
    }
}
