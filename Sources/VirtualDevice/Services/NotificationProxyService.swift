/// com.apple.mobile.notification_proxy (`ideviceinstaller -w`, PROTOCOL.md §9): relays observed
/// device notifications as `RelayNotification`; answers `Shutdown` with `ProxyDeath`.
///
/// The insecure relay (`com.apple.mobile.insecure_notification_proxy`) speaks the same commands;
/// which names a real device lets an untrusted client post there was not established, so it relays
/// the same way.
struct NotificationProxyService {
    let runtime: DeviceRuntime
    let stream: ByteStream
    var insecure = false

    /// Messages the request reader hands to the writer loop.
    enum Event {
        case observe(String)
        case post(String)
        case shutdown
        case closed
    }

    func run() async throws {
        let (id, posted) = runtime.notifications.observe()
        defer { runtime.notifications.remove(id) }
        let (events, sink) = AsyncStream<Event>.makeStream()
        let (stream, runtime) = (self.stream, self.runtime)
        let reader = Task {
            defer { sink.finish() }
            while true {
                guard let request = try? await stream.readDictionary(timeout: .seconds(3600)) else {
                    sink.yield(.closed)
                    return
                }
                let name = request["Name"] as? String ?? ""
                switch request["Command"] as? String {
                case "ObserveNotification": sink.yield(.observe(name))
                case "PostNotification": runtime.notifications.post(name)
                case "Shutdown":
                    sink.yield(.shutdown)
                    return
                default: continue
                }
            }
        }
        defer { reader.cancel() }
        let relay = Task {
            for await name in posted { sink.yield(.post(name)) }
        }
        defer { relay.cancel() }
        var observed = Set<String>()
        for await event in events {
            switch event {
            case .observe(let name):
                observed.insert(name)
                runtime.notifications.register(name, for: id)
            case .post(let name):
                if observed.contains(name) {
                    try await stream.writePropertyList(["Command": "RelayNotification", "Name": name])
                }
            case .shutdown:
                try await stream.writePropertyList(["Command": "ProxyDeath"])
                return
            case .closed:
                return
            }
        }
    }
}
