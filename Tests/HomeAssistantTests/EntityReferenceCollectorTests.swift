import Foundation
import HomeAssistant
import Testing

@Suite("Dashboard entity references")
struct EntityReferenceCollectorTests {
    static let config: JSONValue = [
        "title": "Wall",
        "views": [
            [
                "title": "Main",
                "badges": ["sensor.badge_one", ["entity": "sensor.badge_two"]],
                "cards": [
                    [
                        "type": "entities",
                        "entities": ["light.a", ["entity": "light.b", "name": "B"], ["type": "divider"]],
                    ],
                    ["type": "picture-entity", "entity": "camera.door", "camera_image": "camera.door_hd"],
                    [
                        "type": "vertical-stack",
                        "cards": [
                            [
                                "type": "horizontal-stack",
                                "cards": [["type": "button", "entity": "switch.deep"]],
                            ],
                            [
                                "type": "conditional",
                                "conditions": [["entity": "sun.sun", "state": "above_horizon"]],
                                "card": ["type": "glance", "entities": ["sensor.glance"]],
                            ],
                        ],
                    ],
                    ["type": "markdown", "content": "light.not_a_reference"],
                    [
                        "type": "button", "name": "toggle",
                        "tap_action": [
                            "action": "call-service", "service_data": ["entity_id": ["fan.x", "fan.y"]],
                        ],
                    ],
                ],
            ],
            [
                "type": "sections",
                "sections": [["type": "grid", "cards": [["type": "tile", "entity": "climate.hall"]]]],
            ],
        ],
    ]

    @Test("references in cards, rows, badges, stacks, conditions, sections and actions, with card paths")
    func collects() {
        let found = EntityReferenceCollector.collect(from: Self.config)
        let byID = Dictionary(found.map { ($0.entityID, $0.path) }, uniquingKeysWith: { first, _ in first })
        #expect(byID["light.a"] == "views[0].cards[0].entities[0]")
        #expect(byID["light.b"] == "views[0].cards[0].entities[1]")
        #expect(byID["camera.door"] == "views[0].cards[1]")
        #expect(byID["camera.door_hd"] == "views[0].cards[1]")
        #expect(byID["switch.deep"] == "views[0].cards[2].cards[0].cards[0]")
        #expect(byID["sun.sun"] == "views[0].cards[2].cards[1].conditions[0]")
        #expect(byID["sensor.glance"] == "views[0].cards[2].cards[1].card.entities[0]")
        #expect(byID["sensor.badge_one"] == "views[0].badges[0]")
        #expect(byID["sensor.badge_two"] == "views[0].badges[1]")
        #expect(byID["fan.x"] == "views[0].cards[4].tap_action.service_data")
        #expect(byID["fan.y"] != nil)
        #expect(byID["climate.hall"] == "views[1].sections[0].cards[0]")
        #expect(byID["light.not_a_reference"] == nil)
        #expect(found.count == 12)
    }

    @Test("entity id syntax")
    func entityIDs() {
        #expect(EntityID.isValid("input_boolean.peer_test"))
        #expect(!EntityID.isValid("Light.Kitchen"))
        #expect(!EntityID.isValid("light"))
        #expect(!EntityID.isValid("light.kitchen/../x"))
        #expect(!EntityID.isValid("{{ states('x') }}"))
    }
}
