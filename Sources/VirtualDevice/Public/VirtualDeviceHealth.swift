import Foundation

/// What a twin says about its battery and flash, as lockdown's `com.apple.mobile.battery` and
/// `com.apple.disk_usage` domains and diagnostics_relay's battery node report it. Set through the
/// control socket (`setHealth`) so a test can make a device low on battery or short of storage; kept
/// in the device's state, so it survives an emulator restart as a real device's battery does.
public struct VirtualDeviceHealth: Sendable, Codable, Hashable {
    /// 0...100 (BatteryCurrentCapacity).
    public var batteryLevel: Int
    /// BatteryIsCharging.
    public var charging: Bool
    /// ExternalConnected: on a charger (a wall iPad is, until someone pulls the plug).
    public var externalConnected: Bool
    /// AmountDataAvailable in bytes; nil: what the twin's files leave free of its 64 GB.
    public var dataAvailable: Int?

    public init(
        batteryLevel: Int = 100, charging: Bool = false, externalConnected: Bool = true,
        dataAvailable: Int? = nil
    ) {
        self.batteryLevel = batteryLevel
        self.charging = charging
        self.externalConnected = externalConnected
        self.dataAvailable = dataAvailable
    }

    enum CodingKeys: String, CodingKey {
        case batteryLevel, charging, externalConnected, dataAvailable
    }

    /// A control request names only what it changes; the rest is a plugged-in, full device.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        batteryLevel = try container.decodeIfPresent(Int.self, forKey: .batteryLevel) ?? 100
        charging = try container.decodeIfPresent(Bool.self, forKey: .charging) ?? false
        externalConnected = try container.decodeIfPresent(Bool.self, forKey: .externalConnected) ?? true
        dataAvailable = try container.decodeIfPresent(Int.self, forKey: .dataAvailable)
    }

    /// A wall iPad on its charger, full.
    public static let plugged = VirtualDeviceHealth()
}
