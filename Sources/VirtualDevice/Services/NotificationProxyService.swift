/// com.apple.mobile.notification_proxy (`ideviceinstaller -w`, PROTOCOL.md §9): accepts
/// observations; answers `Shutdown` with `ProxyDeath`.
struct NotificationProxyService {
    let stream: ByteStream

    func run() async throws {
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(600))
            if request["Command"] as? String == "Shutdown" {
                try await stream.writePropertyList(["Command": "ProxyDeath"])
                return
            }
        }
    }
}
