import DeployModel
import Foundation
import HostCrypto
import MQTT

/// One device as Home Assistant gets it: the status, and what the status alone does not hold.
public struct PublishedDevice: Sendable {
    /// The devices.yaml id.
    public var id: String
    /// The Home Assistant device's identifier and the topics' node id (``FleetDiscovery/node(udid:id:)``).
    public var node: String
    /// devices.yaml's product type (`iPad5,1`), when given.
    public var model: String?
    public var status: DeviceStatus
    /// The screen as the last deploy that proved the dashboard saw it (PNG), when there is one.
    public var screenshot: [UInt8]?
    /// `deploy --publish`: this run's outcome on the device, whatever the records hold (a deploy that
    /// failed before installing is in no record).
    public var lastDeploy: PublishedDeploy?
    /// The release of the configured build, where its tag makes one (the update entity shows it).
    public var release: PublishedRelease?

    public init(
        id: String, node: String, model: String?, status: DeviceStatus, screenshot: [UInt8]?,
        lastDeploy: PublishedDeploy? = nil, release: PublishedRelease? = nil
    ) {
        self.release = release
        self.id = id
        self.node = node
        self.model = model
        self.status = status
        self.screenshot = screenshot
        self.lastDeploy = lastDeploy
    }
}

/// A release tag's own words, for the update entity: its annotation (the release notes) and, for a
/// GitHub checkout, its release page.
public struct PublishedRelease: Sendable, Hashable {
    public var notes: String?
    public var url: String?

    public init(notes: String?, url: String?) {
        self.notes = notes
        self.url = url
    }
}

/// What a deploy did on one device, as the `Last deploy` entities show it.
public struct PublishedDeploy: Sendable, Hashable {
    /// `succeeded`, `failed at install: …` (at most 255 characters once published).
    public var outcome: String
    public var finishedAt: Date

    public init(outcome: String, finishedAt: Date) {
        self.outcome = outcome
        self.finishedAt = finishedAt
    }

    /// The device's result in `report`: what a person reading Home Assistant needs, the failed step
    /// and its reason included.
    public init(_ result: DeviceResult, finishedAt: Date) {
        let outcome: String
        switch result.outcome {
        case .succeeded: outcome = "succeeded, dashboard verified"
        case .unverified: outcome = "installed and launched, dashboard not verified"
        case .installedOnly: outcome = "installed only"
        case .failed: outcome = result.failedStep.map { "failed at \($0)" } ?? "failed"
        case .cancelled: outcome = "cancelled"
        case .notStarted: outcome = "not started"
        case .notAvailable: outcome = "not available from this host"
        }
        // The reason as the report has it (secrets already hidden there).
        let reason = result.reason.flatMap { $0.isEmpty ? nil : $0 }
        self.init(
            outcome: reason.map { "\(outcome): \($0)" } ?? outcome, finishedAt: finishedAt)
    }
}

/// Home Assistant MQTT discovery for the fleet, as values: the retained configs that make one Home
/// Assistant device per configured device, its states and its availability. Pure: publishing is
/// ``FleetPublisher``'s.
public struct FleetDiscovery: Sendable {
    public var topics: FleetTopics
    /// `--every`: sensors expire (unavailable) when no state came for this long (hadeploy stopped).
    public var expireAfterSeconds: Int?

    /// Each device also gets the buttons and the update entity Home Assistant sends commands with
    /// (`status --every … --publish --commands`), and the sensor saying what the last one did.
    public var commands = false

    public init(topics: FleetTopics, expireAfterSeconds: Int? = nil, commands: Bool = false) {
        self.topics = topics
        self.expireAfterSeconds = expireAfterSeconds
        self.commands = commands
    }

    /// The buttons (key, name, icon); each sends `PRESS` to `FleetTopics.command(node:key:)`.
    static let buttons: [(key: String, name: String, icon: String)] = [
        ("relaunch", "Relaunch", "mdi:restart"), ("redeploy", "Redeploy", "mdi:package-down"),
        ("refresh", "Refresh", "mdi:refresh"), ("screenshot", "Screenshot", "mdi:camera"),
    ]

    /// `hadeploy_` and 16 hex digits of SHA-256 over the UDID (stable across renames in
    /// devices.yaml and on the device), else over the devices.yaml id. Never the UDID itself.
    public static func node(udid: String?, id: String) -> String {
        let hasher = SHA256Hasher()
        if let udid, !udid.isEmpty {
            hasher.update(Data("hadeploy-udid:\(udid)".utf8))
        } else {
            hasher.update(Data("hadeploy-id:\(id)".utf8))
        }
        return "hadeploy_" + String(hasher.finalizeHex().prefix(16))
    }

    /// Every discovery config topic of a device (what removing it must empty).
    public func configTopics(node: String) -> [String] {
        FleetEntity.all.map { topics.config($0.component, node: node, key: $0.key) }
            + [topics.config("image", node: node, key: "screenshot")]
            + Self.buttons.map { topics.config("button", node: node, key: $0.key) }
            + [
                topics.config("update", node: node, key: "app"),
                topics.config("sensor", node: node, key: "last_command"),
            ]
    }

    /// Every state topic of a device, availability included.
    public func stateTopics(node: String) -> [String] {
        FleetEntity.all.map { topics.state(node: node, key: $0.key) }
            + FleetEntity.all.filter(\.ownAvailability).map {
                topics.state(node: node, key: "\($0.key)/available")
            }
            + [
                topics.state(node: node, key: "attention/attributes"),
                topics.state(node: node, key: "screenshot"),
                topics.state(node: node, key: "app"),
                topics.state(node: node, key: "last_command"),
                topics.state(node: node, key: "host"),
                topics.availability(node: node),
            ]
    }

    /// The update entity's state: the build installed and the one a deploy would install (Home
    /// Assistant offers the install while they differ); nil while the installed one is not known.
    func appState(_ device: PublishedDevice) -> MQTTMessage? {
        let installed: JSON
        switch device.status.installed {
        case .known(let build?): installed = .string(build.description)
        case .known(nil): installed = .null
        case .unavailable: return nil
        }
        var state: [String: JSON] = [
            "installed_version": installed,
            "latest_version": .string(device.status.expected.build.description),
            "title": .string("HA Dashboard"),
        ]
        if let notes = device.release?.notes { state["release_summary"] = .string(FleetEntity.text(notes)) }
        if let url = device.release?.url { state["release_url"] = .string(url) }
        return MQTTMessage(
            topic: topics.state(node: device.node, key: "app"), text: Self.json(state), retain: true)
    }

    /// The discovery configs (retained), then the states of what was measured, then availability
    /// last: Home Assistant never shows the device available with the states of an earlier run. A
    /// device that did not answer gets `reachable: OFF` and `offline`, and no other state: its
    /// entities show "unavailable", never the values of the last run as new.
    public func messages(for device: PublishedDevice) -> [MQTTMessage] {
        var messages = configs(for: device)
        let status = device.status
        let node = device.node
        messages.append(
            MQTTMessage(
                topic: topics.state(node: node, key: "reachable"), text: FleetEntity.onOff(status.reachable),
                retain: true))
        if status.reachable {
            for entity in FleetEntity.all where !entity.alwaysAvailable {
                let state = entity.state(device)
                if entity.ownAvailability {
                    // Not known: unavailable, its old retained time shown as nothing.
                    let known = state != FleetEntity.unknown
                    if known {
                        messages.append(
                            MQTTMessage(
                                topic: topics.state(node: node, key: entity.key), text: state, retain: true))
                    }
                    messages.append(
                        MQTTMessage(
                            topic: topics.state(node: node, key: "\(entity.key)/available"),
                            text: known ? "online" : "offline", retain: true))
                    continue
                }
                messages.append(
                    MQTTMessage(topic: topics.state(node: node, key: entity.key), text: state, retain: true))
            }
            messages.append(
                MQTTMessage(
                    topic: topics.state(node: node, key: "attention/attributes"),
                    text: Self.json(["reasons": .array(status.attention.map { .string($0) })]), retain: true))
            if commands, let app = appState(device) { messages.append(app) }
            if let screenshot = device.screenshot {
                messages.append(
                    MQTTMessage(
                        topic: topics.state(node: node, key: "screenshot"), payload: screenshot, retain: true)
                )
            }
        }
        messages.append(
            MQTTMessage(
                topic: topics.availability(node: node), text: status.reachable ? "online" : "offline",
                retain: true))
        return messages
    }

    /// Empty retained payloads: Home Assistant removes the entities (and the device once it has none),
    /// and the broker forgets the retained states.
    public func removal(node: String) -> [MQTTMessage] {
        (configTopics(node: node) + stateTopics(node: node)).map {
            MQTTMessage(topic: $0, payload: [], retain: true)
        }
    }

    func configs(for device: PublishedDevice) -> [MQTTMessage] {
        let node = device.node
        var deviceInfo: [String: JSON] = [
            "identifiers": .array([.string(node)]),
            "name": .string(Self.displayName(device)),
            "manufacturer": .string("Apple"),
        ]
        if let model = device.model { deviceInfo["model"] = .string(model) }
        if let ios = device.status.ios.value { deviceInfo["sw_version"] = .string("iOS \(ios)") }
        let availability: [String: JSON] = [
            "availability_topic": .string(topics.availability(node: node)),
            "payload_available": .string("online"),
            "payload_not_available": .string("offline"),
        ]
        var messages: [MQTTMessage] = []
        for entity in FleetEntity.all {
            var config: [String: JSON] = [
                "name": .string(entity.name),
                "unique_id": .string("\(node)_\(entity.key)"),
                "object_id": .string(Self.objectID(device.id, entity.key)),
                "state_topic": .string(topics.state(node: node, key: entity.key)),
                "device": .object(deviceInfo),
                "origin": .object(["name": .string("hadeploy")]),
            ]
            if let value = entity.deviceClass { config["device_class"] = .string(value) }
            if let value = entity.unit { config["unit_of_measurement"] = .string(value) }
            if let value = entity.stateClass { config["state_class"] = .string(value) }
            if let value = entity.icon { config["icon"] = .string(value) }
            if let value = entity.entityCategory { config["entity_category"] = .string(value) }
            if entity.deviceClass == "data_size" { config["suggested_display_precision"] = .number(1) }
            if entity.attributes {
                config["json_attributes_topic"] = .string(
                    topics.state(node: node, key: "\(entity.key)/attributes"))
            }
            if entity.ownAvailability {
                // Both must be online: the device, and this time being known.
                config["availability"] = .array(
                    [
                        topics.availability(node: node),
                        topics.state(node: node, key: "\(entity.key)/available"),
                    ].map {
                        .object([
                            "topic": .string($0), "payload_available": .string("online"),
                            "payload_not_available": .string("offline"),
                        ])
                    })
                config["availability_mode"] = .string("all")
            } else if !entity.alwaysAvailable {
                config.merge(availability) { _, new in new }
            }
            if let expireAfterSeconds { config["expire_after"] = .number(expireAfterSeconds) }
            messages.append(
                MQTTMessage(
                    topic: topics.config(entity.component, node: node, key: entity.key),
                    text: Self.json(config),
                    retain: true))
        }
        var image: [String: JSON] = [
            "name": .string("Screenshot"),
            "unique_id": .string("\(node)_screenshot"),
            "object_id": .string(Self.objectID(device.id, "screenshot")),
            "image_topic": .string(topics.state(node: node, key: "screenshot")),
            "content_type": .string("image/png"),
            "device": .object(deviceInfo),
            "origin": .object(["name": .string("hadeploy")]),
        ]
        image.merge(availability) { _, new in new }
        messages.append(
            MQTTMessage(
                topic: topics.config("image", node: node, key: "screenshot"), text: Self.json(image),
                retain: true))
        guard commands else {
            // Started without --commands after a run with: its buttons and update entity go away.
            let gone =
                Self.buttons.map { topics.config("button", node: node, key: $0.key) } + [
                    topics.config("update", node: node, key: "app"),
                    topics.config("sensor", node: node, key: "last_command"),
                ]
            return messages + gone.map { MQTTMessage(topic: $0, payload: [], retain: true) }
        }
        func entity(_ key: String, _ name: String) -> [String: JSON] {
            [
                "name": .string(name), "unique_id": .string("\(node)_\(key)"),
                "object_id": .string(Self.objectID(device.id, key)), "device": .object(deviceInfo),
                "origin": .object(["name": .string("hadeploy")]),
            ]
        }
        for button in Self.buttons {
            var config = entity(button.key, button.name)
            config["command_topic"] = .string(topics.command(node: node, key: button.key))
            config["payload_press"] = .string("PRESS")
            config["icon"] = .string(button.icon)
            config.merge(availability) { _, new in new }
            messages.append(
                MQTTMessage(
                    topic: topics.config("button", node: node, key: button.key), text: Self.json(config),
                    retain: true))
        }
        var update = entity("app", "App")
        update["state_topic"] = .string(topics.state(node: node, key: "app"))
        update["command_topic"] = .string(topics.command(node: node, key: "install"))
        update["payload_install"] = .string("install")
        update.merge(availability) { _, new in new }
        messages.append(
            MQTTMessage(
                topic: topics.config("update", node: node, key: "app"), text: Self.json(update), retain: true)
        )
        // What the last command did: shown even while the device is offline (a busy or refused one).
        var last = entity("last_command", "Last command")
        last["state_topic"] = .string(topics.state(node: node, key: "last_command"))
        last["icon"] = .string("mdi:console")
        messages.append(
            MQTTMessage(
                topic: topics.config("sensor", node: node, key: "last_command"), text: Self.json(last),
                retain: true))
        return messages
    }

    /// The device's own name unless it is a UDID (a twin or an unnamed device), else the devices.yaml id.
    static func displayName(_ device: PublishedDevice) -> String {
        let name = device.status.name
        let hex = name.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit || $0 == "-" }
        return name.isEmpty || (hex && name.count >= 24) ? device.id : name
    }

    /// `hadeploy_<id>_<key>` in the characters an entity id allows: the entity ids automations use.
    static func objectID(_ id: String, _ key: String) -> String {
        let slug = id.lowercased().unicodeScalars.map { scalar -> String in
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) ? String(scalar) : "_"
        }.joined()
        return "hadeploy_\(slug)_\(key)"
    }

    /// A JSON value for the discovery configs (sorted keys: the same bytes every run, so Home
    /// Assistant sees no change and the broker keeps one retained copy).
    indirect enum JSON: Sendable {
        case string(String)
        case number(Int)
        case array([JSON])
        case object([String: JSON])
        case null

        var any: Any {
            switch self {
            case .null: return NSNull()
            case .string(let value): return value
            case .number(let value): return value
            case .array(let values): return values.map(\.any)
            case .object(let values): return values.mapValues(\.any)
            }
        }
    }

    static func json(_ object: [String: JSON]) -> String {
        let data =
            (try? JSONSerialization.data(
                withJSONObject: JSON.object(object).any, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
