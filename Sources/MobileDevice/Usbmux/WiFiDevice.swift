import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A device reached over Wi-Fi that hadeploy's own usbmuxd lists (`UsbmuxRelay` as a muxer): found
/// over multicast DNS or at the address devices.yaml gives, and identified by its lockdownd.
public struct WiFiDevice: Sendable, Equatable, Hashable {
    public var udid: String
    /// Where its lockdownd listens (port 62078): an IPv4 or IPv6 address.
    public var address: String
    /// How it was found, for `devices` and `status`: `mDNS (<instance>)` or `address in devices.yaml`.
    public var foundBy: String
    /// The Wi-Fi MAC address it announced, when it was found over mDNS.
    public var wifiMACAddress: String?

    public init(udid: String, address: String, foundBy: String, wifiMACAddress: String? = nil) {
        self.udid = udid
        self.address = address
        self.foundBy = foundBy
        self.wifiMACAddress = wifiMACAddress
    }

    /// lockdownd's port on every iOS device (over USB through usbmuxd, over Wi-Fi directly).
    public static let lockdownPort: UInt16 = 62_078

    /// The `NetworkAddress` of a usbmuxd `Network` entry: a `sockaddr` in Darwin's layout (length byte,
    /// family 2 = AF_INET or 30 = AF_INET6, port, address), as Apple's usbmuxd sends it and
    /// libimobiledevice reads it before it connects to the device directly.
    var socketAddressData: Data {
        var address4 = in_addr()
        if inet_pton(AF_INET, address, &address4) == 1 {
            var bytes: [UInt8] = [16, 2, UInt8(Self.lockdownPort >> 8), UInt8(Self.lockdownPort & 0xFF)]
            bytes += withUnsafeBytes(of: &address4) { Array($0) }
            bytes += [UInt8](repeating: 0, count: 16 - bytes.count)
            return Data(bytes)
        }
        var address6 = in6_addr()
        let bare = address.split(separator: "%").first.map(String.init) ?? address
        if inet_pton(AF_INET6, bare, &address6) == 1 {
            var bytes: [UInt8] = [
                28, 30, UInt8(Self.lockdownPort >> 8), UInt8(Self.lockdownPort & 0xFF), 0, 0, 0, 0,
            ]
            bytes += withUnsafeBytes(of: &address6) { Array($0) }
            bytes += [0, 0, 0, 0]
            return Data(bytes)
        }
        return Data(count: 16)
    }
}
