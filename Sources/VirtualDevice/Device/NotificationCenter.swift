/// Device-wide notifications (`com.apple.mobile.application_installed`, …) relayed to
/// notification_proxy clients that observe them (`ideviceinstaller -w`, PROTOCOL.md §9).
final class DeviceNotificationCenter: Sendable {
    private let observers = Broadcast<String>(buffer: 64)

    /// A stream of every notification posted from now on; finish it with `remove`.
    func observe() -> (id: Int, stream: AsyncStream<String>) {
        observers.listen()
    }

    func remove(_ id: Int) {
        observers.stopListening(id)
    }

    func post(_ name: String) {
        observers.send(name)
    }
}
