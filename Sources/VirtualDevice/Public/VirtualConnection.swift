/// How usbmuxd reaches a device: which entries `ListDevices` shows for it.
///
/// A Wi-Fi-synced device on the host's network is listed with `ConnectionType: "Network"` and its
/// address; plugged in by USB as well it is listed twice, once per connection type, with the same
/// serial and two DeviceIDs (libimobiledevice issues #487 and #556, go-ios #73).
public enum VirtualConnection: String, Sendable, Codable {
    /// Plugged in by USB only.
    case usb
    /// On the network only (Wi-Fi sync on, no cable): clients reach it at its own address.
    case network
    /// Plugged in and on the network: two entries.
    case usbAndNetwork
}
