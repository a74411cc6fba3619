import Foundation
import HADeployStatus
import MQTT
import Testing

@testable import DeployModel

/// The MQTT discovery messages as values: what Home Assistant would be told about one status.
struct FleetDiscoveryTests {
    static func status(reachable: Bool) -> DeviceStatus {
        let unknown = "the device was not reached"
        return DeviceStatus(
            id: "mini4", name: "Hall iPad", backend: "usb", notOnThisHost: nil, reachable: reachable,
            unreachable: reachable ? nil : "not listed",
            ios: reachable ? .known("15.8") : .unavailable(unknown), build: reachable ? .outdated : .unknown,
            installed: reachable
                ? .known(InstalledBuild(marketingVersion: "1.1.0", buildNumber: "1")) : .unavailable(unknown),
            expected: ExpectedBuild(
                bundleID: "a.b", executable: nil, marketingVersion: "1.2.0", buildNumber: "2",
                source: "git tags"),
            running: .unavailable(unknown),
            dashboard: .known(
                DashboardNow(sessionStarted: nil, summary: "loaded: 2 views, 5 cards", loaded: true)),
            lastDeployedAt: Date(timeIntervalSince1970: 1_700_000_000), lastVerifiedAt: nil,
            battery: reachable
                ? .known(BatteryState(level: 42, charging: true, externalPower: true))
                : .unavailable(unknown),
            storage: .unavailable("not available from the usb backend"),
            boot: .unavailable(unknown), rebootedSinceDeploy: .unavailable(unknown),
            attention: reachable ? ["outdated"] : ["not reached"], seconds: 1)
    }

    static func device(reachable: Bool, screenshot: [UInt8]? = [1, 2, 3]) -> PublishedDevice {
        PublishedDevice(
            id: "mini4", node: FleetDiscovery.node(udid: "00008020-0123456789ABCDEF", id: "mini4"),
            model: "iPad5,1", status: status(reachable: reachable), screenshot: screenshot)
    }

    static func text(_ messages: [MQTTMessageView], _ topic: String) -> String? {
        messages.last { $0.topic == topic }?.text
    }

    @Test func theNodeIsAStableHashNeverTheUDID() {
        let udid = "00008020-0123456789ABCDEF"
        let node = FleetDiscovery.node(udid: udid, id: "mini4")
        #expect(
            node == FleetDiscovery.node(udid: udid, id: "renamed"), "stable across renames in devices.yaml")
        #expect(node.hasPrefix("hadeploy_") && node.count == "hadeploy_".count + 16)
        #expect(!node.contains(udid.lowercased()) && !node.contains(udid))
        #expect(FleetDiscovery.node(udid: nil, id: "mini4") != FleetDiscovery.node(udid: nil, id: "kitchen"))
    }

    /// `deploy --publish`: the run's outcome on the device, the failed step and its reason in it, over
    /// what the records alone would say; long reasons cut to what Home Assistant keeps.
    @Test func aDeploysOutcomeIsItsLastDeployWithTheStepAndTheReason() throws {
        let discovery = FleetDiscovery(topics: try FleetTopics())
        let finished = Date(timeIntervalSince1970: 1_800_000_000)
        func published(_ result: DeviceResult) -> (String?, String?) {
            var device = Self.device(reachable: true)
            device.lastDeploy = PublishedDeploy(result, finishedAt: finished)
            let messages = discovery.messages(for: device).map(MQTTMessageView.init)
            return (
                Self.text(messages, "hadeploy/\(device.node)/last_deploy"),
                Self.text(messages, "hadeploy/\(device.node)/last_deploy_time")
            )
        }
        func result(_ outcome: DeviceOutcome, step: String? = nil, reason: String? = nil) -> DeviceResult {
            DeviceResult(
                id: "mini4", name: "Hall iPad", ios: "15.8", transport: "usb", version: "1.2.0 (2)",
                outcome: outcome, reason: reason, failedStep: step, verification: .notRun, steps: [],
                crashReports: [], seconds: 3)
        }
        let succeeded = published(result(.succeeded))
        #expect(succeeded.0 == "succeeded, dashboard verified")
        #expect(succeeded.1 == "2027-01-15T08:00:00Z", "this deploy's time, not the record's")
        #expect(
            published(result(.failed, step: "install", reason: "the device refused the app: disk full")).0
                == "failed at install: the device refused the app: disk full")
        #expect(
            published(result(.unverified, reason: "HA_TOKEN is not set")).0
                == "installed and launched, dashboard not verified: HA_TOKEN is not set")
        let long = published(result(.failed, step: "launch", reason: String(repeating: "x", count: 400))).0
        #expect(long?.count == 255 && long?.hasPrefix("failed at launch: xxx") == true)
        // Without a deploy (`status --publish`), the records speak.
        let messages = discovery.messages(for: Self.device(reachable: true)).map(MQTTMessageView.init)
        #expect(
            Self.text(messages, "hadeploy/\(Self.device(reachable: true).node)/last_deploy")
                == "installed, dashboard not verified")
    }

    @Test func aReachableDeviceGetsRetainedConfigsStatesAndOnlineLast() throws {
        let discovery = FleetDiscovery(topics: try FleetTopics())
        let device = Self.device(reachable: true)
        let messages = discovery.messages(for: device).map(MQTTMessageView.init)
        #expect(messages.allSatisfy { $0.retain })
        #expect(
            messages.last?.topic == "hadeploy/\(device.node)/availability" && messages.last?.text == "online")
        let state = { (key: String) in Self.text(messages, "hadeploy/\(device.node)/\(key)") }
        #expect(state("battery") == "42" && state("charging") == "ON")
        // Charging before the level: an automation on the level that checks charging reads this status's.
        let topics = messages.map(\.topic)
        let charging = try #require(topics.firstIndex(of: "hadeploy/\(device.node)/charging"))
        #expect(charging < (topics.firstIndex(of: "hadeploy/\(device.node)/battery") ?? 0))
        #expect(state("build_matches") == "OFF" && state("installed_build") == "1.1.0 (1)")
        #expect(state("planned_build") == "1.2.0 (2)")
        #expect(state("storage_free") == "None", "not measured: Home Assistant's unknown")
        #expect(state("last_deploy") == "installed, dashboard not verified")
        #expect(state("last_deploy_time") == "2023-11-14T22:13:20Z")
        #expect(
            state("last_verified") == nil && state("last_verified/available") == "offline", "a time not known"
        )
        #expect(state("last_deploy_time/available") == "online")
        let timestamp = try #require(
            messages.first { $0.topic == "homeassistant/sensor/\(device.node)/last_verified/config" }?.json)
        let availability = try #require(timestamp["availability"] as? [[String: Any]])
        #expect(
            availability.compactMap { $0["topic"] as? String } == [
                "hadeploy/\(device.node)/availability", "hadeploy/\(device.node)/last_verified/available",
            ])
        #expect(timestamp["availability_mode"] as? String == "all" && timestamp["availability_topic"] == nil)
        #expect(
            messages.contains { $0.topic == "hadeploy/\(device.node)/screenshot" && $0.bytes == [1, 2, 3] })

        let config = try #require(
            messages.first { $0.topic == "homeassistant/sensor/\(device.node)/battery/config" }?.json)
        #expect(
            config["device_class"] as? String == "battery" && config["unit_of_measurement"] as? String == "%")
        #expect(config["availability_topic"] as? String == "hadeploy/\(device.node)/availability")
        #expect(config["object_id"] as? String == "hadeploy_mini4_battery")
        let info = try #require(config["device"] as? [String: Any])
        #expect(info["name"] as? String == "Hall iPad" && info["identifiers"] as? [String] == [device.node])
        let reachable = try #require(
            messages.first { $0.topic == "homeassistant/binary_sensor/\(device.node)/reachable/config" }?.json
        )
        #expect(reachable["availability_topic"] == nil, "reachable is always measured")
        let image = try #require(
            messages.first { $0.topic == "homeassistant/image/\(device.node)/screenshot/config" }?.json)
        #expect(image["image_topic"] as? String == "hadeploy/\(device.node)/screenshot")
    }

    @Test func aDeviceThatDidNotAnswerIsOfflineWithNoOldValuesAsNew() throws {
        let discovery = FleetDiscovery(topics: try FleetTopics(topicPrefix: "walls"), expireAfterSeconds: 900)
        let device = Self.device(reachable: false)
        let messages = discovery.messages(for: device).map(MQTTMessageView.init)
        let states = messages.filter { $0.topic.hasPrefix("walls/") }
        #expect(
            states.map(\.topic) == ["walls/\(device.node)/reachable", "walls/\(device.node)/availability"])
        #expect(states.map(\.text) == ["OFF", "offline"])
        let config = try #require(messages.first?.json)
        #expect(config["expire_after"] as? Int == 900)
    }

    /// Home Assistant 2024.3 reads `None` as "unknown" only for binary sensors and sensors with a unit
    /// or device class; a plain text sensor would show the text "None". Its unknown is `unknown`.
    @Test func aTextFactNotMeasuredIsHomeAssistantsUnknownNotTheTextNone() throws {
        let discovery = FleetDiscovery(topics: try FleetTopics())
        var device = Self.device(reachable: true)
        device.status.installed = .unavailable("the backend cannot list apps")
        device.status.dashboard = .unavailable("no Home Assistant configured")
        let messages = discovery.messages(for: device).map(MQTTMessageView.init)
        let state = { (key: String) in Self.text(messages, "hadeploy/\(device.node)/\(key)") }
        #expect(state("installed_build") == "unknown" && state("dashboard") == "unknown")
        #expect(state("dashboard_loaded") == "None", "a binary sensor: None is its unknown")
        #expect(state("storage_free") == "None", "a number: None is its unknown")
    }

    @Test func removalEmptiesEveryRetainedTopic() throws {
        let discovery = FleetDiscovery(topics: try FleetTopics())
        let node = FleetDiscovery.node(udid: nil, id: "gone")
        let removal = discovery.removal(node: node).map(MQTTMessageView.init)
        #expect(removal.allSatisfy { $0.retain && $0.bytes.isEmpty })
        let published = Set(discovery.messages(for: Self.device(reachable: true)).map(\.topic))
            .map { $0.replacingOccurrences(of: Self.device(reachable: true).node, with: node) }
        #expect(Set(published).isSubset(of: Set(removal.map(\.topic))))
    }

    /// `--commands`: the buttons and the update entity on the device's own entry, each command on its
    /// own topic under hadeploy's prefix; the update entity's state the installed and configured builds.
    /// Without it, a service started without --commands takes them away.
    @Test func withCommandsEachDeviceGetsButtonsAndAnUpdateEntityAndWithoutThemLosesThem() throws {
        let device = Self.device(reachable: true)
        let node = device.node
        let with = FleetDiscovery(topics: try FleetTopics(), commands: true).messages(for: device)
            .map(MQTTMessageView.init)
        for key in ["relaunch", "redeploy", "refresh", "screenshot"] {
            let config = try #require(
                with.first { $0.topic == "homeassistant/button/\(node)/\(key)/config" }?.json, "\(key)")
            #expect(config["command_topic"] as? String == "hadeploy/\(node)/command/\(key)")
            #expect(config["payload_press"] as? String == "PRESS")
            #expect(config["object_id"] as? String == "hadeploy_mini4_\(key)")
            #expect((config["device"] as? [String: Any])?["identifiers"] as? [String] == [node])
        }
        let update = try #require(with.first { $0.topic == "homeassistant/update/\(node)/app/config" }?.json)
        #expect(update["command_topic"] as? String == "hadeploy/\(node)/command/install")
        #expect(update["payload_install"] as? String == "install")
        #expect(update["state_topic"] as? String == "hadeploy/\(node)/app")
        let app = try #require(with.last { $0.topic == "hadeploy/\(node)/app" }?.json)
        #expect(
            app["installed_version"] as? String == "1.1.0 (1)"
                && app["latest_version"] as? String == "1.2.0 (2)")
        #expect(with.last?.topic == "hadeploy/\(node)/availability", "availability still comes last")

        let without = FleetDiscovery(topics: try FleetTopics()).messages(for: device).map(
            MQTTMessageView.init)
        let gone = without.filter {
            $0.topic.hasPrefix("homeassistant/button/") || $0.topic.contains("/update/")
        }
        #expect(gone.count == 5 && gone.allSatisfy { $0.bytes.isEmpty && $0.retain }, "\(gone.map(\.topic))")
        #expect(!without.contains { $0.topic == "hadeploy/\(node)/app" })

        // The command topics, read back: only `<prefix>/<node>/command/<name>`.
        let topics = try FleetTopics(topicPrefix: "walls")
        #expect(topics.commands == "walls/+/command/+")
        #expect(topics.command(in: "walls/\(node)/command/relaunch")?.key == "relaunch")
        #expect(topics.command(in: "walls/\(node)/command/relaunch")?.node == node)
        for other in [
            "walls/\(node)/battery", "hadeploy/\(node)/command/relaunch", "walls/\(node)/command/",
            "walls//command/relaunch", "walls/\(node)/command/relaunch/x", "wallsx/\(node)/command/refresh",
        ] {
            #expect(topics.command(in: other) == nil, "\(other)")
        }
    }

    @Test func prefixesWithWildcardsAreRefused() {
        #expect(throws: (any Error).self) { try FleetTopics(topicPrefix: "walls/+") }
        #expect(throws: (any Error).self) { try FleetTopics(discoveryPrefix: "#") }
    }
}

/// A published message, read back.
struct MQTTMessageView {
    var topic: String
    var bytes: [UInt8]
    var retain: Bool
    var text: String { String(decoding: bytes, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] }

    init(_ message: MQTTMessage) {
        topic = message.topic
        bytes = message.payload
        retain = message.retain
    }
}
