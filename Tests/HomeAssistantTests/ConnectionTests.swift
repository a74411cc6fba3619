import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("WebSocket API against a real Home Assistant")
struct ConnectionTests {
    @Test("get_config, get_states, get_services, ping")
    func coreRequests() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            #expect(await connection.haVersion == "2024.3.3")
            let config = try await connection.config()
            #expect(config.version == "2024.3.3")
            #expect(config.locationName == "Test Home")
            #expect(config.state == "RUNNING")
            #expect(config.components.contains("lovelace"))

            let states = try await connection.states()
            let peerTest = try #require(states.first { $0.entityID == "input_boolean.peer_test" })
            #expect(peerTest.friendlyName == "Peer test switch")
            #expect(states.contains { $0.entityID == "zone.home" })

            let services = try await connection.services()
            #expect(services["input_boolean"]?["toggle"] != nil)
            #expect(services["homeassistant"]?["restart"] != nil)

            let roundTrip = try await connection.ping()
            #expect(roundTrip < .seconds(5))
        }
    }

    @Test("lovelace/config, lovelace/dashboards/list and raw requests to create and save a dashboard")
    func lovelace() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            let path = uniqueDashboardPath("wall-typed")
            // Never saved: config_not_found with "No config found."
            try await createDashboard(path, config: nil, on: connection)
            await #expect {
                try await connection.lovelaceConfig(urlPath: path)
            } throws: { error in
                (error as? HomeAssistantError)?.code == "config_not_found"
                    && "\(error)".contains("No config found")
            }
            let saved: JSONValue = [
                "title": "Typed",
                "views": [
                    [
                        "title": "Main",
                        "cards": [["type": "entities", "entities": ["input_boolean.peer_test"]]],
                    ]
                ],
            ]
            _ = try await connection.send(
                RawRequest("lovelace/config/save", ["url_path": .string(path), "config": saved]))
            let config = try await connection.lovelaceConfig(urlPath: path)
            #expect(config.value == saved)
            #expect(config.views.count == 1)

            let dashboards = try await connection.dashboards()
            let listed = try #require(dashboards.first { $0.urlPath == path })
            #expect(listed.id == path.replacingOccurrences(of: "-", with: "_"))

            // A dashboard that does not exist: same code, another message.
            await #expect {
                try await connection.lovelaceConfig(urlPath: "no-such-dashboard")
            } throws: { error in
                (error as? HomeAssistantError)?.code == "config_not_found"
                    && "\(error)".contains("Unknown config specified")
            }
        }
    }

    @Test("subscribe_events and fire_event: the event arrives, even ahead of fire_event's result")
    func subscribeAndFire() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            let type = "hadeploy_test_\(UUID().uuidString.prefix(6).lowercased())"
            let subscription = try await connection.subscribe(to: type)
            // Fired on the same connection: HA sends the event before the result.
            let result = try await connection.fireEvent(type, data: ["n": 1])
            #expect(result["context"]?["id"]?.stringValue != nil)
            let event = try #require(try await firstEvent(of: subscription, within: .seconds(10)))
            #expect(event.eventType == type)
            #expect(event.data["n"] == 1)

            // unsubscribe_events ends the sequence.
            await subscription.cancel()
            var iterator = subscription.makeAsyncIterator()
            #expect(try await iterator.next() == nil)

            // A typed unsubscribe of an unknown subscription is HA's not_found.
            await #expect {
                try await connection.send(UnsubscribeEventsRequest(subscription: 999_999))
            } throws: { error in
                (error as? HomeAssistantError)?.code == "not_found"
            }
        }
    }

    @Test("an unknown command fails alone; a second result for one id is ignored")
    func protocolQuirks() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            await #expect {
                try await connection.send(RawRequest("hadeploy/no_such_command"))
            } throws: { error in
                (error as? HomeAssistantError)?.code == "unknown_command"
            }
            try await connection.ping()
            // HA 2024.3 answers a delete of an unknown dashboard with an error AND a success result.
            await #expect {
                try await connection.send(
                    RawRequest("lovelace/dashboards/delete", ["dashboard_id": "nope_nope"]))
            } throws: { error in
                (error as? HomeAssistantError)?.code == "not_found"
            }
            for _ in 0..<3 { try await connection.ping() }
            let config = try await connection.config()
            #expect(config.version == "2024.3.3")
        }
    }

    @Test("requests in flight at once are matched to their own replies")
    func concurrentRequests() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        switch index % 3 {
                        case 0: return try await connection.config().version == "2024.3.3"
                        case 1: return try await connection.states().contains { $0.entityID == "zone.home" }
                        default: return try await connection.ping() < .seconds(10)
                        }
                    }
                }
                for try await ok in group { #expect(ok) }
            }
        }
    }

    @Test("a request gets its deadline: a tiny one times out with a clear error, the connection lives on")
    func deadline() async throws {
        let peer = try await HomeAssistantServer.shared()
        try await withConnection(peer) { connection in
            // A 1 µs deadline loses the race against the reply, except on a starved scheduler where the
            // reply can be handled first: a few attempts make that race irrelevant.
            var timedOut: (any Error)?
            for _ in 0..<5 where timedOut == nil {
                do {
                    _ = try await connection.send(GetServicesRequest(), timeout: .microseconds(1))
                } catch {
                    timedOut = error
                }
            }
            let error = try #require(timedOut, "a 1 µs deadline never fired")
            #expect((error as? HomeAssistantError)?.kind == .timedOut && "\(error)".contains("get_services"))
            // The late result is dropped (no longer pending) and the next request works.
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await connection.config().state == "RUNNING")
        }
    }
}
