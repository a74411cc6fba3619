import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("https/wss behind a path prefix with a self-signed certificate")
struct TLSPrefixTests {
    @Test("a CA file makes a self-signed server trusted; the prefix reaches the WebSocket and REST APIs")
    func prefixedTLS() async throws {
        let peer = try await HomeAssistantServer.shared()
        let proxy = try await PrefixProxy.start(upstreamPort: peer.port)
        defer { proxy.stop() }
        let token = peer.accessToken
        let server = try ServerAddress("https://127.0.0.1:\(proxy.port)/ha/")
        #expect(server.webSocketURL == "wss://127.0.0.1:\(proxy.port)/ha/api/websocket")

        let trusted = ClientOptions(server: server, token: token, clock: TestHost.clock, caFile: proxy.caFile)
        let connection = HomeAssistantConnection(options: trusted)
        try await connection.connect()
        #expect(try await connection.config().version == "2024.3.3")
        #expect(try await connection.states().contains { $0.entityID == "zone.home" })
        await connection.close()

        let rest = try HomeAssistantREST(options: trusted)
        do {
            #expect(try await rest.apiStatus() == "API running.")
            #expect(try await rest.state(of: "zone.home") != nil)
        } catch {
            Issue.record("REST through the prefix failed: \(error)")
        }
        try await rest.shutdown()

        // Without the CA file the certificate is refused, and the error says where.
        let untrusted = HomeAssistantConnection(
            options: ClientOptions(server: server, token: token, clock: TestHost.clock))
        await #expect {
            try await untrusted.connect()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .unreachable && "\(error)".contains(server.webSocketURL)
                && "\(error)".contains("CA file")
        }
        await untrusted.close()

        // Without the prefix the proxy answers 404 to the upgrade: the error points at the prefix.
        let unprefixed = HomeAssistantConnection(
            options: ClientOptions(
                server: try ServerAddress("https://127.0.0.1:\(proxy.port)/"), token: token,
                clock: TestHost.clock,
                caFile: proxy.caFile))
        await #expect {
            try await unprefixed.connect()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .unreachable && "\(error)".contains("path prefix")
        }
        await unprefixed.close()
    }
}
