import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("Token refused")
struct AuthTests {
    static let wrongToken = "not-a-valid-token-8c1f7a2e"

    @Test(
        "a wrong token gives 'the token for <server> was refused', over WebSocket and REST, without the token"
    )
    func wrongToken() async throws {
        let peer = try await HomeAssistantServer.shared()
        let options = try peer.options(token: AccessToken(Self.wrongToken))
        let connection = HomeAssistantConnection(options: options)
        do {
            try await connection.connect()
            Issue.record("connect() succeeded with a wrong token")
        } catch let error as HomeAssistantError {
            #expect(error.kind == .tokenRefused)
            #expect("\(error)".contains("the token for \(peer.baseURL) was refused"))
            #expect(!"\(error)".contains(Self.wrongToken))
        }
        await connection.close()
        #expect(await connection.state == .closed)

        let rest = try HomeAssistantREST(options: options)
        do {
            _ = try await rest.states()
            Issue.record("REST succeeded with a wrong token")
        } catch let error as HomeAssistantError {
            #expect(error.kind == .tokenRefused)
            #expect("\(error)".contains("the token for \(peer.baseURL) was refused"))
            #expect(!"\(error)".contains(Self.wrongToken))
        }
        try await rest.shutdown()

        // The real token never shows in errors either.
        let realToken = peer.accessToken
        let failing = HomeAssistantConnection(options: try peer.options())
        try await failing.connect()
        do {
            _ = try await failing.send(RawRequest("hadeploy/unknown"))
        } catch {
            #expect(!"\(error)".contains(realToken.reveal()))
        }
        await failing.close()
    }

    @Test("nothing listening: unreachable, naming the URL tried")
    func unreachable() async throws {
        let port = try FreePort.pick()
        let options = ClientOptions(
            server: try ServerAddress("http://127.0.0.1:\(port)/"), token: AccessToken("x"),
            clock: TestHost.clock,
            connectTimeout: .seconds(5))
        let connection = HomeAssistantConnection(options: options)
        await #expect {
            try await connection.connect()
        } throws: { error in
            (error as? HomeAssistantError)?.kind == .unreachable
                && "\(error)".contains("ws://127.0.0.1:\(port)/api/websocket")
        }
        await connection.close()
    }
}
