import Foundation
import HADeployCore
import MobileDevice

/// `hadeploy muxer`: hadeploy's usbmuxd on a socket of its own, for other tools.
public enum WiFiMuxer {
    /// Serves at `path` until the process ends: `upstream`'s devices (nil: the system usbmuxd's), the
    /// USB hosts' (`hosts`, each for its own devices) and the Wi-Fi devices found over multicast DNS,
    /// with pair records from `pairRecords` first.
    public static func serve(
        at path: String, upstream: String?, hosts: USBHostRoutes?, pairRecords: URL,
        fileSystem: any FileSystem
    ) throws {
        try USBTransport.serveMuxer(
            at: path, upstream: upstream, others: hosts?.others ?? [], addresses: [:],
            pairRecords: pairRecords,
            fileSystem: fileSystem)
    }

    /// Where hadeploy's usbmuxd reached the Wi-Fi device `udid` in this process, and how it found it.
    public static func found(udid: String) -> (address: String, foundBy: String)? {
        USBTransport.wifiDevices.first { $0.udid == udid }.map { ($0.address, $0.foundBy) }
    }

    /// One line per Wi-Fi device listed now: its UDID, address and how it was found.
    public static var foundDevices: [String] {
        USBTransport.wifiDevices.map { "\($0.udid) at \($0.address), found by \($0.foundBy)" }
    }
}
