/// Finding an app's device and sensors in the registries (`config/device_registry/list`,
/// `config/entity_registry/list`; both need an admin token).
extension HomeAssistantConnection {
    /// The entity of sensor `key` (e.g. `active_dashboard`) of the mobile_app device called
    /// `deviceName` (case-insensitive; the user's rename counts too), or nil when there is none yet.
    /// When several devices share the name, the one registered last wins: a reinstalled app
    /// registers again and the old entry stays behind.
    public nonisolated func mobileAppSensor(deviceName: String, key: String) async throws -> MobileAppSensor?
    {
        let devices = try await send(RawRequest("config/device_registry/list")).arrayValue ?? []
        let wanted = deviceName.lowercased()
        let candidates = devices.filter { device in
            let isMobileApp =
                device["identifiers"]?.arrayValue?.contains {
                    $0.arrayValue?.first?.stringValue == "mobile_app"
                }
                ?? false
            let names = [device["name_by_user"]?.stringValue, device["name"]?.stringValue].compactMap { $0 }
            return isMobileApp && names.contains { $0.lowercased() == wanted }
        }
        guard !candidates.isEmpty else { return nil }
        let entities = try await send(RawRequest("config/entity_registry/list")).arrayValue ?? []
        for device in candidates.reversed() {
            guard let id = device["id"]?.stringValue else { continue }
            let match = entities.first { entity in
                guard entity["device_id"]?.stringValue == id, entity["platform"]?.stringValue == "mobile_app"
                else { return false }
                let unique = entity["unique_id"]?.stringValue ?? ""
                let entityID = entity["entity_id"]?.stringValue ?? ""
                return unique.hasSuffix("_" + key) || entityID.hasSuffix("_" + key)
            }
            if let entityID = match?["entity_id"]?.stringValue {
                let name = device["name_by_user"]?.stringValue ?? device["name"]?.stringValue ?? deviceName
                return MobileAppSensor(deviceID: id, deviceName: name, entityID: entityID)
            }
        }
        return nil
    }
}
