/// Which of usbmuxd's entries for a device is used. A Wi-Fi-synced device is listed with
/// `ConnectionType: "Network"` and its address, and libimobiledevice then connects to it directly over
/// TCP; without the network lookup the Debian tools pick USB entries only (`ideviceinstaller -n`).
public enum USBLookup: String, Sendable, Hashable, Encodable {
    /// The device's USB entry (plugged in, or on a USB host).
    case usb
    /// The device's Network entry (`network: true` in devices.yaml).
    case network
}
