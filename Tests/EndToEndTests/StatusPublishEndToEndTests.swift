import Foundation
import HADeployCore
import TestSupport
import Testing
import VirtualDevice

/// `hadeploy status --publish` with the real binary, twins and a real Mosquitto on loopback (the
/// broker in `.env`'s MQTT_URL, as a user keeps it): what Home Assistant's MQTT discovery would
/// read, checked as the retained messages mosquitto_sub sees.
@Suite(.serialized)
struct StatusPublishEndToEndTests {
    /// The retained discovery configs by their `object_id` (`hadeploy_mini4_battery`).
    static func configs(_ retained: [String: Data]) throws -> [String: [String: Any]] {
        var configs: [String: [String: Any]] = [:]
        for (topic, payload) in retained where topic.hasPrefix("homeassistant/") && topic.hasSuffix("/config")
        {
            let object = try #require(
                try JSONSerialization.jsonObject(with: payload) as? [String: Any], "\(topic)")
            configs[try #require(object["object_id"] as? String)] = object
        }
        return configs
    }

    static func setBroker(_ url: String, in world: DeployWorld) throws {
        let file = world.root.appendingPathComponent(".env")
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("MQTT_URL=") }
        try (lines.joined(separator: "\n") + "\nMQTT_URL=\(url)\n").write(
            to: file, atomically: true, encoding: .utf8)
    }

    @Test func eachTwinBecomesAHomeAssistantDeviceWithItsMeasuredValues() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1], DeployWorld.defaultTwins[2]])
        defer { Task { await world.shutdown() } }
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        try Self.setBroker(mosquitto.url, in: world)
        let deploy = try await world.deploy([
            "mini4", "kitchen", "--no-build", "--artifacts", "artifacts", "--report", "report",
        ])
        #expect(deploy.status == 0, "\(deploy.stderr)")
        try await world.usbmuxd.setHealth(
            VirtualDeviceHealth(batteryLevel: 12, charging: false, externalConnected: false),
            udid: try #require(world.udids["mini4"]))
        // A device no usbmuxd lists: published as unreachable, its entities unavailable.
        try world.addDevice(
            id: "hallway",
            lines: [
                "product_type: iPad5,1", "ios: \"15.8\"", "arch: arm64", "flavour: modern",
                "transport: usb", "udid: 00008020-00000000DEADBEEF",
            ])

        let status = try await world.deploy([
            "status", "mini4", "kitchen", "hallway", "--artifacts", "artifacts", "--timeout", "20", "--json",
            "--publish",
        ])
        #expect(status.status == 3, "a device did not answer: \(status.stdout)\n\(status.stderr)")
        #expect(
            status.stderr.contains("published 3 device(s) to mqtt://hadeploy@127.0.0.1:\(mosquitto.port)"))
        #expect(status.stderr.contains("(unavailable: hallway)"), "\(status.stderr)")
        for text in [status.stdout, status.stderr] { #expect(!text.contains(mosquitto.password)) }
        let devices = try StatusEndToEndTests.devices(status.stdout)

        let retained = try await mosquitto.retained("#")
        let configs = try Self.configs(retained)
        func state(_ objectID: String) throws -> String? {
            let config = try #require(configs[objectID], "\(objectID) in \(configs.keys.sorted())")
            let topic = try #require((config["state_topic"] ?? config["image_topic"]) as? String)
            return retained[topic].map { String(decoding: $0, as: UTF8.self) }
        }
        func availability(_ objectID: String) throws -> String? {
            let topic = try #require(configs[objectID]?["availability_topic"] as? String)
            return retained[topic].map { String(decoding: $0, as: UTF8.self) }
        }

        // The values are the ones `status --json` printed.
        for id in ["mini4", "kitchen"] {
            let device = try #require(devices[id])
            let battery = try #require(StatusEndToEndTests.value(device["battery"]) as? [String: Any])
            #expect(try state("hadeploy_\(id)_battery") == "\(battery["level"] as? Int ?? -1)")
            #expect(
                try state("hadeploy_\(id)_charging")
                    == ((battery["charging"] as? Bool) == true ? "ON" : "OFF"))
            #expect(try state("hadeploy_\(id)_reachable") == "ON")
            #expect(try state("hadeploy_\(id)_build_matches") == "ON", "\(device["build"] ?? "")")
            #expect(try state("hadeploy_\(id)_installed_build") == "1.2.0 (2)")
            #expect(try state("hadeploy_\(id)_planned_build") == "1.2.0 (2)")
            let storage = try #require(StatusEndToEndTests.value(device["storage"]) as? [String: Any])
            let free = Double(storage["availableBytes"] as? Int ?? 0) / 1e9
            #expect(try state("hadeploy_\(id)_storage_free") == String(format: "%.2f", free))
            #expect(try state("hadeploy_\(id)_last_deploy") == "installed, dashboard verified")
            #expect(try state("hadeploy_\(id)_last_verified")?.hasPrefix("20") == true)
            #expect(try availability("hadeploy_\(id)_battery") == "online")
            // The screen of the verified deploy, as the image entity's bytes.
            let shot = try Data(contentsOf: world.root.appendingPathComponent("report/screenshots/\(id).png"))
            let image = try #require(configs["hadeploy_\(id)_screenshot"])
            #expect(image["content_type"] as? String == "image/png")
            #expect(retained[try #require(image["image_topic"] as? String)] == shot)
            // One Home Assistant device per configured device, named without its UDID.
            let info = try #require(configs["hadeploy_\(id)_battery"]?["device"] as? [String: Any])
            #expect(info["model"] as? String == "iPad5,1" && info["sw_version"] as? String == "iOS 15.8")
        }
        #expect(try state("hadeploy_mini4_attention") == "ON")
        #expect(try state("hadeploy_kitchen_attention") == "OFF")
        #expect(try state("hadeploy_hallway_reachable") == "OFF")
        #expect(try availability("hadeploy_hallway_battery") == "offline")
        #expect(try state("hadeploy_hallway_battery") == nil, "nothing measured, nothing published")
        // The raw UDIDs are in no topic and no payload.
        for udid in Array(world.udids.values) + ["00008020-00000000DEADBEEF"] {
            for (topic, payload) in retained {
                #expect(!topic.contains(udid) && !String(decoding: payload, as: UTF8.self).contains(udid))
            }
        }

        // The hallway iPad leaves devices.yaml: its entities are removed (empty retained configs).
        let yamlFile = world.root.appendingPathComponent("devices.yaml")
        let yaml = try String(contentsOf: yamlFile, encoding: .utf8)
        let cut = try #require(yaml.range(of: "  hallway:\n"))
        try String(yaml[..<cut.lowerBound]).write(to: yamlFile, atomically: true, encoding: .utf8)
        let again = try await world.deploy(["status", "mini4", "--artifacts", "artifacts", "--publish"])
        #expect(again.stderr.contains("removed from Home Assistant: hallway"), "\(again.stderr)")
        let after = try Self.configs(try await mosquitto.retained("#"))
        #expect(after["hadeploy_hallway_battery"] == nil && after["hadeploy_mini4_battery"] != nil)
        #expect(after["hadeploy_kitchen_battery"] != nil, "a device only not asked this time stays")
    }

    /// The retained state of an entity (by its `object_id`), as Home Assistant would read it.
    static func state(_ objectID: String, _ retained: [String: Data]) throws -> Data? {
        let config = try #require(try configs(retained)[objectID], "\(objectID)")
        let topic = try #require((config["state_topic"] ?? config["image_topic"]) as? String)
        return retained[topic]
    }

    static func text(_ objectID: String, _ retained: [String: Data]) throws -> String? {
        try state(objectID, retained).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aDeployWithPublishShowsItsOutcomeAndScreenshotOnTheSameEntities() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1], DeployWorld.defaultTwins[2]])
        defer { Task { await world.shutdown() } }
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        try Self.setBroker(mosquitto.url, in: world)
        // No --report: the screenshots are taken for Home Assistant all the same.
        let deploy = try await world.deploy([
            "mini4", "kitchen", "--no-build", "--artifacts", "artifacts", "--publish",
        ])
        #expect(deploy.status == 0, "\(deploy.stderr)")
        #expect(
            deploy.stderr.contains("published 2 device(s) to mqtt://hadeploy@127.0.0.1:\(mosquitto.port)"),
            "\(deploy.stderr)")
        let retained = try await mosquitto.retained("#")
        var shots: [String: Data] = [:]
        for id in ["mini4", "kitchen"] {
            #expect(try Self.text("hadeploy_\(id)_last_deploy", retained) == "succeeded, dashboard verified")
            let time = try #require(try Self.text("hadeploy_\(id)_last_deploy_time", retained))
            let when = try #require(ISO8601DateFormatter().date(from: time), "\(time)")
            #expect(abs(when.timeIntervalSinceNow) < 600, "\(time)")
            // The same entities `status --publish` makes: the build on it, matching the plan.
            #expect(try Self.text("hadeploy_\(id)_build_matches", retained) == "ON")
            #expect(try Self.text("hadeploy_\(id)_installed_build", retained) == "1.2.0 (2)")
            #expect(try Self.text("hadeploy_\(id)_reachable", retained) == "ON")
            // The verified screen, as recorded with the deploy.
            let image = try #require(try Self.state("hadeploy_\(id)_screenshot", retained), "\(id)")
            #expect(image.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(id)'s screenshot is a PNG")
            let recorded = try Data(
                contentsOf: world.root.appendingPathComponent(".hadeploy/deployed/\(id).png"))
            #expect(image == recorded)
            shots[id] = image
        }
        // The screenshots' folder of the run is gone; nothing but the records keeps them.
        let left = FileManager.default.enumerator(atPath: world.root.path)?.compactMap { $0 as? String }
            .filter { ($0 as NSString).lastPathComponent.hasPrefix("screenshots-") }
        #expect(left?.isEmpty == true, "\(left ?? [])")

        // The kitchen iPad's install fails on the next deploy: its entity says where and why, its
        // screenshot stays the last verified one, and the mini's moves on.
        try await world.usbmuxd.inject(
            .failInstall(error: "APIInternalError", description: "Install failed: disk I/O error"),
            udid: try #require(world.udids["kitchen"]))
        let failed = try await world.deploy([
            "mini4", "kitchen", "--no-build", "--artifacts", "artifacts", "--force", "--publish",
        ])
        #expect(failed.status == 1, "\(failed.stderr)")
        #expect(failed.stderr.contains("published 2 device(s)"), "\(failed.stderr)")
        let after = try await mosquitto.retained("#")
        let outcome = try #require(try Self.text("hadeploy_kitchen_last_deploy", after))
        #expect(outcome.hasPrefix("failed at install"), "\(outcome)")
        #expect(outcome.contains("disk I/O error"), "\(outcome)")
        #expect(try Self.state("hadeploy_kitchen_screenshot", after) == shots["kitchen"])
        #expect(try Self.text("hadeploy_mini4_last_deploy", after) == "succeeded, dashboard verified")
        #expect(
            try Self.text("hadeploy_mini4_last_deploy_time", after)
                != Self.text("hadeploy_mini4_last_deploy_time", retained))
        for text in [deploy.stdout, deploy.stderr, failed.stdout, failed.stderr] {
            #expect(!text.contains(mosquitto.password) && !text.contains(world.ha.token))
        }

        // A deploy stopped before any device (Home Assistant refuses the token): each device says so.
        let tokenFile = world.root.appendingPathComponent("wrong-token")
        try Data("not-a-token\n".utf8).write(to: tokenFile)
        #expect(chmod(tokenFile.path, 0o600) == 0)
        let refused = try await world.deploy([
            "mini4", "--no-build", "--artifacts", "artifacts", "--publish", "--token-file", tokenFile.path,
        ])
        #expect(refused.status != 0, "\(refused.stderr)")
        #expect(refused.stderr.contains("published 1 device(s)"), "\(refused.stderr)")
        let stopped = try #require(
            try Self.text("hadeploy_mini4_last_deploy", try await mosquitto.retained("#")))
        #expect(stopped.hasPrefix("not started: "), "\(stopped)")

        // A broker that is gone: the deploy still deploys, then one line and exit 4.
        mosquitto.stop()
        let unpublished = try await world.deploy([
            "mini4", "--no-build", "--artifacts", "artifacts", "--publish",
        ])
        #expect(unpublished.status == 4, "\(unpublished.stderr)")
        let errors = unpublished.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(
            errors.count == 1 && errors[0].contains("cannot reach the MQTT broker"), "\(unpublished.stderr)")
    }

    @Test func aBrokerThatCannotBeUsedIsOneLineAfterTheStatus() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }

        // Credentials refused.
        let wrong = "wrong-\(UUID().uuidString.prefix(6))"
        try Self.setBroker("mqtt://\(mosquitto.user):\(wrong)@127.0.0.1:\(mosquitto.port)", in: world)
        let refused = try await world.deploy(["status", "mini4", "--artifacts", "artifacts", "--publish"])
        #expect(refused.status == 4, "\(refused.stdout)\n\(refused.stderr)")
        #expect(refused.stdout.contains("mini4"), "the status is printed: \(refused.stdout)")
        let line = refused.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(line.count == 1 && line[0].contains("password"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(wrong) && !refused.stdout.contains(wrong))

        // A wildcard in the topic prefix: a usage error, the status still printed.
        try Self.setBroker(mosquitto.url, in: world)
        let wildcard = try await world.deploy([
            "status", "mini4", "--artifacts", "artifacts", "--publish", "--topic-prefix", "walls/#",
        ])
        #expect(wildcard.status == 64, "\(wildcard.stderr)")
        #expect(
            wildcard.stdout.contains("mini4") && wildcard.stderr.contains("wildcard"), "\(wildcard.stderr)")
        #expect(try await mosquitto.retained("#").isEmpty, "nothing was published")

        // The password on the command line: said to be readable there, never printed.
        let onCommandLine = try await world.deploy([
            "status", "mini4", "--artifacts", "artifacts", "--publish",
            "mqtt://\(mosquitto.user):\(mosquitto.password)@127.0.0.1:\(mosquitto.port)",
        ])
        #expect(onCommandLine.stderr.contains("published 1 device(s)"), "\(onCommandLine.stderr)")
        #expect(onCommandLine.stderr.contains("warning: the broker's password is on the command line"))
        #expect(
            !onCommandLine.stderr.contains(mosquitto.password)
                && !onCommandLine.stdout.contains(mosquitto.password))

        // The broker gone.
        mosquitto.stop()
        let gone = try await world.deploy(["status", "mini4", "--artifacts", "artifacts", "--publish"])
        #expect(gone.status == 4, "\(gone.stderr)")
        #expect(gone.stdout.contains("mini4"))
        #expect(
            gone.stderr.contains("cannot reach the MQTT broker at mqtt://hadeploy@127.0.0.1"),
            "\(gone.stderr)")
        #expect(!gone.stderr.contains(mosquitto.password))
    }

    @Test func everyIntervalPublishesTheTwinsNewBatteryRereadsDevicesYamlAndStopsCleanly() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1]])
        defer { Task { await world.shutdown() } }
        let mosquitto = try await MosquittoBroker()
        defer { mosquitto.stop() }
        try Self.setBroker(mosquitto.url, in: world)
        let service = try await world.service([
            "status", "all", "--artifacts", "artifacts", "--timeout", "2", "--publish", "--every", "7s",
        ])
        defer { service.stop() }
        #expect(
            try await service.line(containing: "published 1 device(s)", within: 60) != nil,
            "\(service.output)")
        let first = try await mosquitto.retainedText("hadeploy/+/battery")
        #expect(first.values.first == "100", "\(first)")
        // The twin's battery changes; the next interval publishes it.
        try await world.usbmuxd.setHealth(
            VirtualDeviceHealth(batteryLevel: 33, charging: false, externalConnected: false),
            udid: try #require(world.udids["mini4"]))
        // A device added to devices.yaml while it runs is asked from the next interval on.
        try world.addDevice(
            id: "hallway",
            lines: [
                "product_type: iPad5,1", "ios: \"15.8\"", "arch: arm64", "flavour: modern",
                "transport: usb", "udid: 00008020-00000000DEADBEEF",
            ])
        var seen: String?
        for _ in 0..<40 {
            seen = try await mosquitto.retainedText("hadeploy/+/battery").values.first
            if seen == "33" { break }
            try await TestHost.clock.sleep(for: .milliseconds(500))
        }
        #expect(seen == "33", "\(service.output)")
        #expect(
            try await service.line(containing: "published 2 device(s)", within: 30)?.contains(
                "(unavailable: hallway)") == true, "\(service.output)")
        #expect(!service.output.contains(mosquitto.password))
        // A mistake in devices.yaml while it runs: one line with where, and the devices of the last
        // good read are still asked and published.
        let yaml = world.root.appendingPathComponent("devices.yaml")
        let good = try String(contentsOf: yaml, encoding: .utf8)
        try (good + "  broken: [\n").write(to: yaml, atomically: true, encoding: .utf8)
        let said = try await service.line(
            containing: "the devices of the last good read are asked", within: 30)
        #expect(said?.contains("devices.yaml:") == true, "\(service.output)")
        let before = service.output.components(separatedBy: "published 2 device(s)").count
        var after = before
        for _ in 0..<100 where after == before {
            try await TestHost.clock.sleep(for: .milliseconds(200))
            after = service.output.components(separatedBy: "published 2 device(s)").count
        }
        #expect(after > before, "\(service.output)")

        // SIGTERM, as systemd stops the unit: exit 0, and the twin, which is still there, is not
        // marked unavailable on the way out.
        let status = service.terminate(within: 15)
        #expect(status == 0, "\(service.output)")
        let configs = try Self.configs(try await mosquitto.retained("#"))
        let topic = try #require(configs["hadeploy_mini4_battery"]?["availability_topic"] as? String)
        #expect(try await mosquitto.retainedText(topic).values.first == "online")
    }
}
