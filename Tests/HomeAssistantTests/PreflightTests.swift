import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("Preflight against a real Home Assistant")
struct PreflightTests {
    static let wallConfig: JSONValue = [
        "title": "Wall",
        "views": [
            [
                "title": "Main",
                "badges": ["sensor.missing_badge"],
                "cards": [
                    ["type": "entities", "entities": ["input_boolean.peer_test", "light.missing_lamp"]],
                    [
                        "type": "picture-entity", "entity": "camera.missing_door",
                        "camera_image": "camera.missing_door",
                    ],
                    [
                        "type": "vertical-stack",
                        "cards": [
                            [
                                "type": "horizontal-stack",
                                "cards": [["type": "button", "entity": "light.missing_lamp"]],
                            ]
                        ],
                    ],
                    ["type": "button", "entity": "zone.home"],
                ],
            ],
            [
                "type": "sections",
                "sections": [["type": "grid", "cards": [["type": "tile", "entity": "climate.missing"]]]],
            ],
        ],
    ]

    @Test("missing entities are warnings with the card paths where they are used")
    func missingEntities() async throws {
        let peer = try await HomeAssistantServer.shared()
        let path = uniqueDashboardPath("wall-preflight")
        try await withConnection(peer) { connection in
            try await createDashboard(path, config: Self.wallConfig, on: connection)
        }
        let report = await Preflight(options: try peer.options()).run(dashboard: .named(path))
        #expect(report.passed)
        #expect(report.reachable && report.tokenAccepted)
        #expect(report.homeAssistantVersion == "2024.3.3")
        #expect(report.dashboard?.exists == true && report.dashboard?.saved == true)
        #expect(report.dashboard?.referencedEntities == 8)
        let missing = Dictionary(
            uniqueKeysWithValues: report.missingEntities.map { ($0.entityID, $0.usedAt) })
        #expect(missing.count == 4)
        #expect(
            missing["light.missing_lamp"] == [
                "views[0].cards[0].entities[1]", "views[0].cards[2].cards[0].cards[0]",
            ])
        #expect(missing["camera.missing_door"] == ["views[0].cards[1]"])
        #expect(missing["sensor.missing_badge"] == ["views[0].badges[0]"])
        #expect(missing["climate.missing"] == ["views[1].sections[0].cards[0]"])
        #expect(report.warnings.filter { $0.code == "entity_missing" }.count == 4)
        #expect(report.warnings.contains { $0.message.contains("views[0].cards[0].entities[1]") })

        // The report is a JSON document.
        let json = try JSONEncoder().encode(report)
        let decoded = try JSONDecoder().decode(PreflightReport.self, from: json)
        #expect(decoded == report)
    }

    @Test("a dashboard that does not exist fails, listing the ones that do; one never saved warns")
    func dashboardExistence() async throws {
        let peer = try await HomeAssistantServer.shared()
        let unsaved = uniqueDashboardPath("wall-unsaved")
        try await withConnection(peer) { connection in
            try await createDashboard(unsaved, config: nil, on: connection)
        }
        let preflight = Preflight(options: try peer.options())

        let absent = await preflight.run(dashboard: .named("wall-absent"))
        #expect(!absent.passed)
        let issue = try #require(absent.errors.first)
        #expect(issue.code == "dashboard_not_found")
        #expect(issue.message.contains(unsaved))
        #expect(absent.dashboard?.availableDashboards.contains(unsaved) == true)

        let notSaved = await preflight.run(dashboard: .named(unsaved))
        #expect(notSaved.passed)
        #expect(notSaved.dashboard?.exists == true && notSaved.dashboard?.saved == false)
        #expect(notSaved.warnings.map(\.code) == ["dashboard_not_saved"])

        let serverOnly = await preflight.run(dashboard: .none)
        #expect(
            serverOnly.passed && serverOnly.dashboard == nil && serverOnly.homeAssistantVersion == "2024.3.3")
    }

    @Test("unreachable server and refused token are errors naming the URL")
    func failures() async throws {
        let port = try FreePort.pick()
        let nowhere = await Preflight(
            options: ClientOptions(
                server: try ServerAddress("http://127.0.0.1:\(port)/"), token: AccessToken("x"),
                clock: TestHost.clock)
        ).run(dashboard: .defaultDashboard)
        #expect(!nowhere.passed && !nowhere.reachable)
        #expect(nowhere.errors.first?.code == "unreachable")
        #expect(nowhere.errors.first?.message.contains("ws://127.0.0.1:\(port)/api/websocket") == true)

        let peer = try await HomeAssistantServer.shared()
        let refused = await Preflight(options: try peer.options(token: AccessToken("wrong-token-123")))
            .run(dashboard: .defaultDashboard)
        #expect(refused.reachable && !refused.tokenAccepted && !refused.passed)
        #expect(refused.errors.first?.code == "token_refused")
        #expect(refused.errors.first?.message.contains("wrong-token-123") == false)
    }
}
