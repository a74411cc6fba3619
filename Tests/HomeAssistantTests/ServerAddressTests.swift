import HomeAssistant
import Testing

@Suite("Server URLs")
struct ServerAddressTests {
    @Test("a path prefix carries over to the WebSocket and REST URLs")
    func pathPrefix() throws {
        let address = try ServerAddress("https://host/ha/")
        #expect(address.webSocketURL == "wss://host:443/ha/api/websocket")
        #expect(address.webSocketPath == "/ha/api/websocket")
        #expect(address.restURL("api/states") == "https://host:443/ha/api/states")
        #expect(address.baseURL == "https://host:443/ha/")
        #expect(try ServerAddress("https://host/ha").webSocketURL == "wss://host:443/ha/api/websocket")
    }

    @Test("http, ws and wss map to the right schemes and default ports")
    func schemes() throws {
        #expect(
            try ServerAddress("http://127.0.0.1:8123").webSocketURL == "ws://127.0.0.1:8123/api/websocket")
        #expect(try ServerAddress("http://ha.local").port == 80)
        #expect(try ServerAddress("ws://ha.local:8123/api/websocket").baseURL == "http://ha.local:8123/")
        #expect(
            try ServerAddress("wss://ha.example/sub/api/websocket").baseURL == "https://ha.example:443/sub/")
        #expect(
            try ServerAddress("https://ha.example/api/").restURL("/api/config")
                == "https://ha.example:443/api/config")
        #expect(try ServerAddress("http://[::1]:8123/").webSocketURL == "ws://[::1]:8123/api/websocket")
    }

    @Test("a URL without a usable scheme or host is refused with a hint")
    func invalid() {
        for bad in ["homeassistant.local:8123", "ftp://x/", "", "http://"] {
            #expect(throws: HomeAssistantError.self) { try ServerAddress(bad) }
        }
        do {
            _ = try ServerAddress("ftp://x/")
        } catch {
            #expect("\(error)".contains("use http, https, ws or wss"))
        }
    }

    /// Before: `%0d%0a` in HA_SERVER was decoded into the path and printed as a raw line break; a
    /// megabyte-long server string was printed whole.
    @Test("an encoded line break or an endless URL is refused, and the message stays one short line")
    func encodedControlsAndLength() {
        for bad in ["http://ha.local:8123/%0d%0aX-Injected:%201", "http://ha.local/a%00b"] {
            let error = #expect(throws: HomeAssistantError.self) { try ServerAddress(bad) }
            let text = "\(error.map { "\($0)" } ?? "")"
            #expect(text.contains("encoded control character"), "\(text)")
            #expect(!text.contains("\r") && !text.contains("\n"), "\(text.debugDescription)")
        }
        let long = "http://ha.local/" + String(repeating: "a", count: 100_000)
        let error = #expect(throws: HomeAssistantError.self) { try ServerAddress(long) }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("100016 bytes long (at most 2048)"), "\(text.prefix(300))")
        #expect(text.utf8.count < 600, "the message is \(text.utf8.count) bytes")
    }
}
