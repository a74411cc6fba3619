/// com.apple.mobile.heartbeat: the device says `Marco` every `Interval` seconds and drops a client
/// that stops answering `Polo` (what keeps a Wi-Fi connection, and pymobiledevice3's, alive).
struct HeartbeatService {
    let stream: ByteStream

    /// Seconds between two Marcos.
    static let interval = 10

    func run() async throws {
        while true {
            try await stream.writePropertyList(["Command": "Marco", "Interval": Self.interval])
            // A silent client is gone: a real device closes after one missed beat.
            let reply = try await stream.readDictionary(timeout: .seconds(Int64(Self.interval * 2)))
            guard reply["Command"] as? String == "Polo" else { return }
            try await Task.sleep(for: .seconds(Self.interval))
        }
    }
}
