/// What the emulator tells about one of its devices.
public struct VirtualDeviceInfo: Sendable, Codable, Equatable {
    public let name: String
    public let udid: String
    public let deviceName: String
    public let productType: String
    public let productVersion: String
    public let buildVersion: String
    public let cpuArchitecture: String
    /// usbmuxd DeviceID while attached; nil while rebooting.
    public let deviceID: Int?
    public let developerImageMounted: Bool
    public let activeFaults: [VirtualFault]
}
