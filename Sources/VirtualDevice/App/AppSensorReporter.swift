import Foundation
import HomeAssistant

/// HASensorReporter: registers the app's sensors through its webhook, sends them all at start and
/// one again when its value may have changed (`active_dashboard` on every dashboard received).
/// A 410 answer means Home Assistant forgot the registration: the webhook id is dropped.
final class AppSensorReporter: Sendable {
    static let sensors: [(key: String, name: String, icon: String)] = [
        ("battery_level", "Battery Level", "mdi:battery"),
        ("battery_state", "Battery State", "mdi:battery-charging"),
        ("screen_brightness", "Screen Brightness", "mdi:brightness-6"),
        ("storage_available", "Storage Available", "mdi:harddisk"),
        ("app_state", "App State", "mdi:application"),
        ("active_dashboard", "Active Dashboard", "mdi:view-dashboard"),
        ("connection_type", "Connection Type", "mdi:network"),
        ("last_update_trigger", "Last Update Trigger", "mdi:update"),
        ("device_model", "Device Model", "mdi:cellphone"),
    ]

    let rest: HomeAssistantREST
    let webhookID: String
    let log: AppLogFile
    let values: @Sendable (String) -> JSONValue
    let gone: @Sendable () -> Void

    init(
        rest: HomeAssistantREST, webhookID: String, log: AppLogFile,
        values: @escaping @Sendable (String) -> JSONValue,
        gone: @escaping @Sendable () -> Void
    ) {
        self.rest = rest
        self.webhookID = webhookID
        self.log = log
        self.values = values
        self.gone = gone
    }

    deinit {
        let rest = rest
        Task { try? await rest.shutdown() }
    }

    func start() async {
        for sensor in Self.sensors {
            var data: [String: JSONValue] = [
                "unique_id": .string(sensor.key), "name": .string(sensor.name), "type": "sensor",
                "entity_category": "diagnostic", "icon": .string(sensor.icon), "state": values(sensor.key),
            ]
            if sensor.key == "battery_level" {
                data["device_class"] = "battery"
                data["unit_of_measurement"] = "%"
            }
            guard
                await send(
                    "register_sensor", .object(data), failure: "Failed to register sensor \(sensor.key)")
            else { return }
        }
        log.info("device", "Sensor reporter started")
        await report(Self.sensors.map(\.key), failure: "Batch update error")
    }

    func report(_ keys: [String]) async {
        await report(keys, failure: keys.count == 1 ? "Update \(keys[0]) error" : "Batch update error")
    }

    private func report(_ keys: [String], failure: String) async {
        let entries: [JSONValue] = keys.map { key in
            let icon = Self.sensors.first { $0.key == key }?.icon ?? "mdi:cellphone"
            return ["unique_id": .string(key), "type": "sensor", "state": values(key), "icon": .string(icon)]
        }
        _ = await send("update_sensor_states", .array(entries), failure: failure)
    }

    private func send(_ type: String, _ data: JSONValue, failure: String) async -> Bool {
        do {
            let (status, _) = try await rest.sendWebhook(webhookID, type: type, data: data)
            if status == 410 {
                log.warn("device", "410 Gone — webhook invalidated, clearing registration")
                log.info("device", "Unregistered (local credentials cleared)")
                gone()
                return false
            }
            if !(200..<300).contains(status) {
                log.error("sensor", "\(failure): Webhook failed: HTTP \(status)")
                return false
            }
            return true
        } catch {
            log.error("sensor", "\(failure): \(error)")
            return false
        }
    }
}
