import Foundation
import TestSupport
import Testing

@testable import HomeAssistant

/// What the HTTP/1.1 and WebSocket code of this library must get right on its own (it no longer
/// rests on an HTTP client library): each against a real peer where one exists.
@Suite("HTTP and WebSocket transport")
struct TransportTests {
    /// aiohttp (the server HA runs on) in chunked transfer coding: the prefix proxy with `--chunked`.
    @Test("a chunked answer is read whole and the same as the plain one")
    func chunkedAnswer() async throws {
        let peer = try await HomeAssistantServer.shared()
        let proxy = try await PrefixProxy.start(upstreamPort: peer.port, chunked: true)
        defer { proxy.stop() }
        let base = "https://127.0.0.1:\(proxy.port)/ha/"
        // The proxy really answers chunked, with no Content-Length (asked without a token).
        let headers = proxy.directory.appendingPathComponent("headers.txt")
        try await HelperTool.run(
            "/usr/bin/curl", ["-sk", "-o", "/dev/null", "-D", headers.path, base + "api/"],
            deadline: .seconds(30))
        let head = try String(contentsOf: headers, encoding: .utf8).lowercased()
        #expect(head.contains("transfer-encoding: chunked"), "\(head)")
        #expect(!head.contains("content-length"), "\(head)")

        let direct = try HomeAssistantREST(options: try peer.options())
        let chunked = try HomeAssistantREST(
            options: ClientOptions(
                server: try ServerAddress(base), token: peer.accessToken, clock: TestHost.clock,
                caFile: proxy.caFile))
        #expect(try await chunked.apiStatus() == "API running.")
        // /api/states is many 4 KiB chunks: over 16 KiB by this test's own state, whichever tests ran
        // before it. Other tests add states meanwhile, never remove one.
        _ = try await direct.setState(
            "sensor.transport_chunk_probe", state: "on",
            attributes: ["padding": .string(String(repeating: "y", count: 20 << 10))])
        let plain = try await direct.states()
        let viaProxy = try await chunked.states()
        #expect(Set(plain.map(\.entityID)).isSubset(of: Set(viaProxy.map(\.entityID))))
        #expect(viaProxy.first { $0.entityID == "zone.home" } == plain.first { $0.entityID == "zone.home" })
        #expect(try JSONEncoder().encode(viaProxy).count > 16 << 10)
    }

    @Test("an answer over the cap is refused, whether its length is declared or chunked")
    func answerOverTheCap() async throws {
        let peer = try await HomeAssistantServer.shared()
        let proxy = try await PrefixProxy.start(upstreamPort: peer.port, chunked: true)
        defer { proxy.stop() }
        let cap = 4096
        // The states answer is over the cap by this test's own state, whichever tests ran before it
        // (with 6 tests of the suite at a time, it can be among the first).
        let writer = try HomeAssistantREST(options: try peer.options())
        _ = try await writer.setState(
            "sensor.transport_cap_probe", state: "on",
            attributes: ["padding": .string(String(repeating: "x", count: 2 * cap))])
        try await writer.shutdown()
        let declared = try HomeAssistantREST(options: try peer.options(), maxResponseBytes: cap)
        let chunked = try HomeAssistantREST(
            options: ClientOptions(
                server: try ServerAddress("https://127.0.0.1:\(proxy.port)/ha/"), token: peer.accessToken,
                clock: TestHost.clock,
                caFile: proxy.caFile),
            maxResponseBytes: cap)
        for rest in [declared, chunked] {
            // A small answer still fits.
            #expect(try await rest.apiStatus() == "API running.")
            await #expect {
                try await rest.states()
            } throws: { error in
                (error as? HomeAssistantError)?.kind == .invalidResponse
                    && "\(error)".contains("answered GET /api/states with more than 4096 bytes")
            }
        }
    }

    @Test("a server that accepts and stays silent: REST and WebSocket end at their deadlines")
    func silentServer() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let options = ClientOptions(
            server: try ServerAddress("http://127.0.0.1:\(listener.port)/"),
            token: AccessToken("silent-test"), clock: TestHost.clock,
            connectTimeout: .seconds(2), requestTimeout: .seconds(2), reconnect: .never)
        let clock = ContinuousClock()

        let rest = try HomeAssistantREST(options: options)
        var started = clock.now
        await #expect {
            try await rest.config()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .timedOut
                && "\(error)".contains("did not answer GET /api/config within 2 s")
                && !"\(error)".contains("silent-test")
        }
        #expect(clock.now - started < .seconds(6))

        let connection = HomeAssistantConnection(options: options)
        started = clock.now
        await #expect {
            try await connection.connect()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .timedOut && "\(error)".contains("stalled")
        }
        #expect(clock.now - started < .seconds(6))
        await connection.close()
    }

    @Test("a WebSocket message far over 64 KiB arrives whole (get_states of a house with many states)")
    func bigMessage() async throws {
        let peer = try await HomeAssistantServer.shared()
        let rest = try HomeAssistantREST(options: try peer.options())
        let padding = String(repeating: "p", count: 400)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in stride(from: worker, to: 400, by: 8) {
                        try await rest.setState(
                            "sensor.bigmessage_\(index)", state: "\(index)",
                            attributes: [
                                "friendly_name": "Big message sensor \(index)", "padding": .string(padding),
                            ])
                    }
                }
            }
            try await group.waitForAll()
        }
        try await withConnection(peer) { connection in
            let states = try await connection.states()
            let ours = states.filter { $0.entityID.hasPrefix("sensor.bigmessage_") }
            #expect(ours.count == 400)
            #expect(ours.allSatisfy { $0.attributes["padding"]?.stringValue == padding })
            // 400 states of over 400 bytes each: the reply is at least 160 kB.
            #expect(try JSONEncoder().encode(states).count > 160_000)
        }
    }

    /// HA closes the WebSocket of a token that is revoked while it is connected (its own close
    /// frame); reconnecting then meets `auth_invalid`.
    @Test("the server closes the socket (its token revoked): the connection ends with the token refused")
    func serverCloses() async throws {
        let peer = try await HomeAssistantServer.shared()
        let name = "hadeploy-close-test-\(UUID().uuidString.prefix(6))"
        let token = try await withConnection(peer) { admin in
            try await admin.send(
                RawRequest("auth/long_lived_access_token", ["client_name": .string(name), "lifespan": 1]))
        }
        let shortLived = try #require(token.stringValue)
        let connection = HomeAssistantConnection(options: try peer.options(token: AccessToken(shortLived)))
        try await connection.connect()
        let subscription = try await connection.subscribe(to: "hadeploy_close_test")
        #expect(try await connection.config().version == "2024.3.3")

        try await withConnection(peer) { admin in
            let tokens = try await admin.send(RawRequest("auth/refresh_tokens")).arrayValue ?? []
            let id = try #require(tokens.first { $0["client_name"]?.stringValue == name }?["id"]?.stringValue)
            _ = try await admin.send(
                RawRequest("auth/delete_refresh_token", ["refresh_token_id": .string(id)]))
        }
        #expect(await eventually(within: .seconds(15)) { await connection.state == .closed })
        await #expect {
            for try await _ in subscription {}
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .tokenRefused && !"\(error)".contains(shortLived)
        }
        await #expect {
            try await connection.ping()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .notConnected
        }
        await connection.close()
    }
}
