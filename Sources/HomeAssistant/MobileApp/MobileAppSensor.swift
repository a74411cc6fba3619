/// One sensor a mobile_app device reports, as found in Home Assistant's registries.
public struct MobileAppSensor: Sendable, Hashable, Codable {
    /// The device registry id of the app's device.
    public let deviceID: String
    /// The device's name as registered (`device_name`; a user's rename wins).
    public let deviceName: String
    public let entityID: String
}
