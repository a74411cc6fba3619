import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("REST API against a real Home Assistant")
struct RESTTests {
    @Test("/api/, /api/config, /api/states, /api/states/<id>, POST /api/states/<id>")
    func restCalls() async throws {
        let peer = try await HomeAssistantServer.shared()
        let rest = try HomeAssistantREST(options: try peer.options())
        do {
            #expect(try await rest.apiStatus() == "API running.")
            let config = try await rest.config()
            #expect(config.version == "2024.3.3")
            let states = try await rest.states()
            #expect(states.contains { $0.entityID == "input_boolean.peer_test" })
            let one = try #require(try await rest.state(of: "input_boolean.peer_test"))
            #expect(["on", "off"].contains(one.state))
            #expect(try await rest.state(of: "sensor.does_not_exist") == nil)

            let created = try await rest.setState(
                "sensor.rest_probe", state: "42", attributes: ["unit_of_measurement": "W"])
            #expect(created.state == "42")
            #expect(try await rest.state(of: "sensor.rest_probe")?.attributes["unit_of_measurement"] == "W")

            await #expect(throws: HomeAssistantError.self) { try await rest.state(of: "../api/config") }
        } catch {
            try await rest.shutdown()
            throw error
        }
        try await rest.shutdown()
    }
}
