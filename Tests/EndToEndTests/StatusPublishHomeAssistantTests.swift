import Foundation
import HADeployCore
import HomeAssistant
import TestSupport
import Testing
import VirtualDevice

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `hadeploy status --publish` read back by the real Home Assistant 2024.3.3: its MQTT integration set
/// up through its own config flow on the same loopback Mosquitto (both logged in with a password), the
/// devices in its device registry, the entities in its state machine with the values `status --json`
/// printed, and the README's low-battery automation firing when a twin's battery drops.
@Suite(.serialized)
struct StatusPublishHomeAssistantTests {
    /// The README's alert for `mini4` (without its `for: "00:10:00"`, which a test cannot wait out),
    /// whose action also turns on an input_boolean and fires an event, both read back.
    static let automation = """
        input_boolean:
          hadeploy_low_battery:
            name: Wall iPad battery low
        automation:
          - id: hadeploy_low_battery
            alias: Wall iPad battery low
            trigger:
              - platform: numeric_state
                entity_id: sensor.hadeploy_mini4_battery
                below: 20
            condition:
              - condition: state
                entity_id: binary_sensor.hadeploy_mini4_charging
                state: "off"
            action:
              - service: persistent_notification.create
                data:
                  title: Wall iPad
                  message: "Hall iPad battery at {{ states('sensor.hadeploy_mini4_battery') }} % and not charging"
              - service: input_boolean.turn_on
                target:
                  entity_id: input_boolean.hadeploy_low_battery
              - event: hadeploy_low_battery
                event_data:
                  battery: "{{ states('sensor.hadeploy_mini4_battery') }}"

        """

    /// The issue's own commands, on the twins of `--virtual` (the iOS 15 mini4 and the iOS 18 iPhone,
    /// driven through the pinned pymobiledevice3): `hadeploy mini4 iphone --virtual --publish`, then
    /// `hadeploy status mini4 iphone --virtual --publish`, then the status as a service.
    @Test func homeAssistantShowsTheDeployEachTwinAndItsLowBatteryAutomationFires() async throws {
        // Home Assistant of this test's own: its MQTT entry and automation change no one else's.
        let ha = try await HomeAssistantServer.start(packages: ["hadeploy": Self.automation])
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        do {
            try await run(ha: ha, mosquitto: mosquitto)
        } catch {
            try? await ha.discard()
            throw error
        }
        try await ha.discard()
    }

    /// Until every one of `wanted` has a state that `ready` accepts (30 s), the states by entity id.
    static func states(
        _ connection: HomeAssistantConnection, until wanted: [String],
        ready: @escaping (String, String) -> Bool = { _, state in state != "unknown" && state != "unavailable"
        }
    ) async throws -> [String: JSONValue] {
        var states: [String: JSONValue] = [:]
        for _ in 0..<120 {
            states = try await Self.states(connection)
            let done = wanted.allSatisfy { entity in
                guard let state = states[entity]?["state"]?.stringValue else { return false }
                return ready(entity, state)
            }
            if done { break }
            try await TestHost.clock.sleep(for: .milliseconds(250))
        }
        return states
    }

    func run(ha: HomeAssistantServer, mosquitto: MosquittoBroker) async throws {
        try await Self.setUpMQTT(ha: ha, mosquitto: mosquitto)
        let pymobiledevice3 = try ModernDeviceEndToEndTests.pymobiledevice3()
        let twins = [DeployWorld.defaultTwins[1], ModernDeviceEndToEndTests.twins[0]]
        let world = try await DeployWorld(twins: twins, ha: ha)
        defer { Task { await world.shutdown() } }
        try StatusPublishEndToEndTests.setBroker(mosquitto.url, in: world)
        // The twins of --virtual, no usbmuxd of the world's: the iPhone through pymobiledevice3.
        let environment = ["USBMUXD_SOCKET_ADDRESS": "", "PYMOBILEDEVICE3": pymobiledevice3]
        let ids = ["mini4", "iphone"]
        let models = ["mini4": ("iPad5,1", "iOS 15.8"), "iphone": ("iPhone17,2", "iOS 18.6")]

        // The deploy publishes its outcome and its screenshots (no --report asked).
        let deploy = try await world.deploy(
            ["mini4", "iphone", "--virtual", "--no-build", "--publish"], environment: environment,
            timeout: .seconds(420))
        #expect(deploy.status == 0, "\(deploy.stderr)")
        #expect(deploy.stderr.contains("published 2 device(s)"), "\(deploy.stderr)")
        let connection = try await ha.connected()
        defer { Task { await connection.close() } }
        let deployed = try await Self.states(
            connection,
            until: ids.flatMap { ["sensor.hadeploy_\($0)_last_deploy", "image.hadeploy_\($0)_screenshot"] })
        for id in ids {
            #expect(
                deployed["sensor.hadeploy_\(id)_last_deploy"]?["state"]?.stringValue
                    == "succeeded, dashboard verified",
                "\(id)")
            let recorded = try Data(
                contentsOf: world.root.appendingPathComponent(".hadeploy/virtual/twins-deployed/\(id).png"))
            #expect(recorded.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(id)'s screenshot is a PNG")
            #expect(try await Self.image("image.hadeploy_\(id)_screenshot", ha: ha) == recorded, "\(id)")
        }

        // The Done-when: `status mini4 iphone --virtual --publish`, read back from Home Assistant.
        let status = try await world.deploy(
            ["status", "mini4", "iphone", "--virtual", "--timeout", "20", "--json", "--publish"],
            environment: environment, timeout: .seconds(240))
        #expect(status.status == 1, "the twins' apps are not running after a --virtual run: \(status.stdout)")
        #expect(status.stderr.contains("published 2 device(s)"), "\(status.stderr)")
        let devices = try StatusEndToEndTests.devices(status.stdout)
        let wanted = ids.flatMap { id in
            [
                "sensor.hadeploy_\(id)_battery", "sensor.hadeploy_\(id)_storage_free",
                "binary_sensor.hadeploy_\(id)_build_matches", "image.hadeploy_\(id)_screenshot",
            ]
        }
        let states = try await Self.states(connection, until: wanted)

        let registry = try await connection.send(RawRequest("config/device_registry/list"))
        let entities = try await connection.send(RawRequest("config/entity_registry/list"))
        for id in ids {
            let device = try #require(devices[id], "\(status.stdout)")
            func state(_ entity: String) throws -> JSONValue {
                try #require(
                    states[entity], "\(entity) in \(states.keys.filter { $0.contains("hadeploy") }.sorted())")
            }
            let battery = try #require(StatusEndToEndTests.value(device["battery"]) as? [String: Any])
            let batteryState = try state("sensor.hadeploy_\(id)_battery")
            #expect(batteryState["state"]?.stringValue == "\(battery["level"] as? Int ?? -1)")
            #expect(batteryState["attributes"]?["device_class"]?.stringValue == "battery")
            #expect(batteryState["attributes"]?["unit_of_measurement"]?.stringValue == "%")
            let storage = try #require(StatusEndToEndTests.value(device["storage"]) as? [String: Any])
            let free = Double(storage["availableBytes"] as? Int ?? 0) / 1e9
            let storageState = try state("sensor.hadeploy_\(id)_storage_free")
            #expect(storageState["state"]?.stringValue == String(format: "%.2f", free))
            #expect(storageState["attributes"]?["unit_of_measurement"]?.stringValue == "GB")
            #expect(storageState["attributes"]?["device_class"]?.stringValue == "data_size")
            // `status --json`'s build verdict, as Home Assistant's on/off.
            let upToDate = (device["build"] as? String) == "up to date"
            #expect(
                try state("binary_sensor.hadeploy_\(id)_build_matches")["state"]?.stringValue
                    == (upToDate ? "on" : "off"), "\(device["build"] ?? "")")
            #expect(upToDate, "the deploy just installed the planned build: \(device["build"] ?? "")")
            // The image entity serves the screen of the verified deploy, byte for byte.
            let image = try state("image.hadeploy_\(id)_screenshot")
            #expect(image["state"]?.stringValue?.hasPrefix("20") == true, "a time: \(image)")
            let shot = try Data(
                contentsOf: world.root.appendingPathComponent(".hadeploy/virtual/twins-deployed/\(id).png"))
            #expect(try await Self.image("image.hadeploy_\(id)_screenshot", ha: ha) == shot)

            // One device in the registry per configured device, every entity tied to it.
            let entityEntry = try #require(
                entities.arrayValue?.first { $0["entity_id"]?.stringValue == "sensor.hadeploy_\(id)_battery" }
            )
            let deviceID = try #require(entityEntry["device_id"]?.stringValue)
            let entry = try #require(registry.arrayValue?.first { $0["id"]?.stringValue == deviceID })
            let (model, ios) = try #require(models[id])
            #expect(
                entry["model"]?.stringValue == model && entry["sw_version"]?.stringValue == ios, "\(entry)")
            #expect(entry["manufacturer"]?.stringValue == "Apple")
            #expect(entry["name"]?.stringValue?.isEmpty == false)
            let identifiers = entry["identifiers"]?.arrayValue?.compactMap { $0.arrayValue } ?? []
            #expect(identifiers.first?.first?.stringValue == "mqtt", "\(identifiers)")
            #expect(identifiers.first?.last?.stringValue?.hasPrefix("hadeploy_") == true, "\(identifiers)")
            for name in [
                "binary_sensor.hadeploy_\(id)_build_matches", "image.hadeploy_\(id)_screenshot",
                "sensor.hadeploy_\(id)_storage_free",
            ] {
                let other = entities.arrayValue?.first { $0["entity_id"]?.stringValue == name }
                #expect(other?["device_id"]?.stringValue == deviceID, "\(name)")
            }
            let verified = states["sensor.hadeploy_\(id)_last_verified"]?["state"]?.stringValue
            #expect(
                verified?.hasPrefix("20") == true && verified?.hasSuffix("+00:00") == true,
                "\(verified ?? "nil")")
        }
        // Every entity of both devices has a state Home Assistant understood: none is the text
        // "None", and its MQTT integration logged no payload it refused.
        let ours = states.filter {
            $0.key.contains(".hadeploy_mini4_") || $0.key.contains(".hadeploy_iphone_")
        }
        #expect(ours.count == 2 * 17, "\(ours.keys.sorted())")
        for (entity, value) in ours { #expect(value["state"]?.stringValue != "None", "\(entity)") }
        let log = try String(
            contentsOf: ha.directory.appendingPathComponent("home-assistant.log"), encoding: .utf8)
        let refused = log.split(separator: "\n").filter {
            $0.contains("homeassistant.components.mqtt") && ($0.contains("WARNING") || $0.contains("ERROR"))
        }
        #expect(refused.isEmpty, "\(refused)")
        for (entity, value) in ours {
            for udid in world.udids.values {
                #expect(!"\(value)".contains(udid), "\(entity)")
            }
        }

        // As a service: `status --every`, the twins kept running. The automation is armed, its
        // input_boolean off.
        #expect(states["input_boolean.hadeploy_low_battery"]?["state"]?.stringValue == "off")
        #expect(states["automation.wall_ipad_battery_low"]?["state"]?.stringValue == "on")
        let fired = try await connection.subscribe(to: "hadeploy_low_battery")
        let service = try await world.service(
            // 20 s per device: the iOS 18 twin is read through a pymobiledevice3 helper (Python's start
            // and a tunnel), and the suite's other tests load both cores meanwhile; a read that misses
            // its deadline is published as unavailable, rightly, which the end of this test rules out.
            ["status", "mini4", "iphone", "--virtual", "--timeout", "20", "--publish", "--every", "25s"],
            environment: environment)
        defer { service.stop() }
        #expect(
            try await service.line(containing: "published 2 device(s)", within: 120) != nil,
            "\(service.output)")
        // mini4's battery drops below 20 through its twin's control socket, not charging: the next
        // interval publishes it and the automation fires with the new value.
        let control = world.root.appendingPathComponent(".hadeploy/virtual/devices")
        let udid = try #require(world.udids["mini4"])
        let replies = try TwinControl.request(
            control,
            [
                #"{"command":"setHealth","udid":"\#(udid)","health":{"batteryLevel":12,"charging":false,"externalConnected":false}}"#
            ])
        #expect(replies.first?.contains("\"ok\":true") == true, "\(replies)")
        let event = try await Self.first(of: fired, within: .seconds(60))
        #expect(event?.data["battery"]?.numberValue == 12, "\(String(describing: event))\n\(service.output)")
        let after = try await Self.states(
            connection, until: ["input_boolean.hadeploy_low_battery"], ready: { _, state in state == "on" })
        #expect(after["input_boolean.hadeploy_low_battery"]?["state"]?.stringValue == "on")
        #expect(after["sensor.hadeploy_mini4_battery"]?["state"]?.stringValue == "12")
        #expect(after["binary_sensor.hadeploy_mini4_charging"]?["state"]?.stringValue == "off")
        #expect(
            after["automation.wall_ipad_battery_low"]?["attributes"]?["last_triggered"]?.stringValue != nil)
        await fired.cancel()
        // SIGTERM ends the service with 0, and the devices stay available in Home Assistant.
        #expect(service.terminate(within: 30) == 0, "\(service.output)")
        try await TestHost.clock.sleep(for: .seconds(1))
        let stopped = try await Self.states(connection)
        #expect(stopped["sensor.hadeploy_mini4_battery"]?["state"]?.stringValue == "12")
        #expect(
            stopped["sensor.hadeploy_iphone_battery"]?["state"]?.stringValue != "unavailable",
            "\(service.output)")

        for text in [deploy.stdout, deploy.stderr, status.stdout, status.stderr, service.output] {
            #expect(!text.contains(mosquitto.password) && !text.contains(ha.token))
        }
    }

    /// Home Assistant's MQTT integration, set up as a user does: its config flow over REST, with the
    /// broker's user and password (in the request body, never on a command line).
    static func setUpMQTT(ha: HomeAssistantServer, mosquitto: MosquittoBroker) async throws {
        let started = try await post(ha, "api/config/config_entries/flow", ["handler": "mqtt"])
        #expect(started["type"] as? String == "form" && started["step_id"] as? String == "broker")
        let flow = try #require(started["flow_id"] as? String)
        let done = try await post(
            ha, "api/config/config_entries/flow/\(flow)",
            [
                "broker": "127.0.0.1", "port": mosquitto.port, "username": mosquitto.user,
                "password": mosquitto.password,
            ])
        #expect(done["type"] as? String == "create_entry", "\(done["errors"] ?? done["type"] ?? "")")
        let result = try #require(done["result"] as? [String: Any])
        try #require(result["state"] as? String == "loaded", "\(result["state"] ?? "")")
    }

    static func request(_ ha: HomeAssistantServer, _ path: String) throws -> URLRequest {
        var request = URLRequest(url: try #require(URL(string: "\(ha.url)/\(path)")))
        request.setValue("Bearer \(ha.token)", forHTTPHeaderField: "Authorization")
        request.timeoutInterval = 30
        return request
    }

    static func post(_ ha: HomeAssistantServer, _ path: String, _ body: [String: Any]) async throws
        -> [String: Any]
    {
        var request = try request(ha, path)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, response) = try await URLSession.shared.data(for: request)
        let code = (response as? HTTPURLResponse)?.statusCode ?? 0
        try #require(code == 200, "POST \(path): \(code) \(String(decoding: data, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The image entity's picture as Home Assistant serves it (`/api/image_proxy/<entity>`).
    static func image(_ entity: String, ha: HomeAssistantServer) async throws -> Data {
        let (data, response) = try await URLSession.shared.data(
            for: try request(ha, "api/image_proxy/\(entity)"))
        let code = (response as? HTTPURLResponse)?.statusCode ?? 0
        try #require(code == 200, "image_proxy \(entity): \(code)")
        return data
    }

    /// `get_states`, by entity id.
    static func states(_ connection: HomeAssistantConnection) async throws -> [String: JSONValue] {
        let list = try await connection.send(RawRequest("get_states"))
        var states: [String: JSONValue] = [:]
        for state in list.arrayValue ?? [] {
            if let id = state["entity_id"]?.stringValue { states[id] = state }
        }
        return states
    }

    static func first(of subscription: Subscription<HomeAssistantEvent>, within timeout: Duration)
        async throws -> HomeAssistantEvent?
    {
        try await withThrowingTaskGroup(of: HomeAssistantEvent?.self) { group in
            group.addTask {
                for try await event in subscription { return event }
                return nil
            }
            group.addTask {
                try await TestHost.clock.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
