import CUsbmuxd
import Foundation
import HADeployCore
import Synchronization

/// One entry of usbmuxd's device list.
struct UsbmuxEntry: Sendable, Equatable {
    let udid: String
    let deviceID: UInt32
    let productID: UInt32
    let isNetwork: Bool
}

/// usbmuxd's own requests (ListDevices, ReadPairRecord), made through libusbmuxd, which reads
/// `USBMUXD_SOCKET_ADDRESS` on every connection (PROTOCOL.md §1.1). Blocking: call on a worker.
enum UsbmuxDirectory {
    static let nextStepForDaemon =
        "Check that usbmuxd is running (\(PlatformCalls.usbmuxdStatusCommand)) or that USBMUXD_SOCKET_ADDRESS points "
        + "to a reachable usbmuxd (UNIX:/path or host:port)."

    /// The devices usbmuxd lists right now.
    static func list() throws -> [UsbmuxEntry] {
        // libusbmuxd connects wherever USBMUXD_SOCKET_ADDRESS says: never to another user's socket.
        try UsbmuxRelay.checkTrusted(UsbmuxRelay.libusbmuxdAddress(), step: "usbmuxd_get_device_list")
        var list: UnsafeMutablePointer<usbmuxd_device_info_t>?
        let count = usbmuxd_get_device_list(&list)
        guard count >= 0 else {
            // libusbmuxd's errno hides what happened: ask once more ourselves and say what came back.
            switch UsbmuxProbe.probe(address: address) {
            case .broken(let what):
                throw MobileDeviceError(
                    .protocolError, step: "usbmuxd_get_device_list", device: nil,
                    reason: "usbmuxd at \(address) answered ListDevices wrongly: \(what)",
                    nextStep:
                        "Restart usbmuxd (\(PlatformCalls.usbmuxdRestartCommand)), or check that USBMUXD_SOCKET_ADDRESS "
                        + "points to a usbmuxd and not to another service.",
                    isTransient: true)
            case .notRunning(let why):
                throw MobileDeviceError(
                    .usbmuxdUnavailable, step: "usbmuxd_get_device_list", device: nil,
                    reason: "usbmuxd could not be reached at \(address) (\(why))",
                    nextStep: nextStepForDaemon, isTransient: true)
            case .answered:
                throw MobileDeviceError(
                    .usbmuxdUnavailable, step: "usbmuxd_get_device_list", device: nil,
                    reason: "usbmuxd could not be reached at \(address) (\(errnoText(-count)))",
                    nextStep: nextStepForDaemon, isTransient: true)
            }
        }
        defer { usbmuxd_device_list_free(&list) }
        var result: [UsbmuxEntry] = []
        guard let list else { return result }
        // The list ends with an entry whose handle is 0 (PROTOCOL.md §1.5).
        var index = 0
        while list[index].handle != 0 {
            var info = list[index]
            let udid = withUnsafeBytes(of: &info.udid) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            result.append(
                UsbmuxEntry(
                    udid: udid, deviceID: info.handle, productID: info.product_id,
                    isNetwork: info.conn_type == CONNECTION_TYPE_NETWORK))
            index += 1
        }
        return result
    }

    /// Whether usbmuxd holds a pair record for this UDID (this host was trusted once).
    static func hasPairRecord(udid: String) -> Bool {
        var data: UnsafeMutablePointer<CChar>?
        var size: UInt32 = 0
        let result = usbmuxd_read_pair_record(udid, &data, &size)
        if let data { free(data) }
        return result == 0 && size > 0
    }

    /// The HostID in usbmuxd's pair record for this UDID (what lockdownd's StartSession names).
    static func pairRecordHostID(udid: String) -> String? {
        var data: UnsafeMutablePointer<CChar>?
        var size: UInt32 = 0
        let result = usbmuxd_read_pair_record(udid, &data, &size)
        defer { if let data { free(data) } }
        guard result == 0, size > 0, let data else { return nil }
        let record = PlistBridge.parse(Data(bytes: data, count: Int(size)))
        guard let hostID = record?.dictionary?["HostID"]?.string, !hostID.isEmpty else { return nil }
        return hostID
    }

    /// The usbmuxd libusbmuxd's requests reach (through the relay once a route was set; before that,
    /// the address the process started with, as `USBTransport.recordStartingAddress` was told), for
    /// messages and for asking it again ourselves.
    static var address: String {
        if let route = UsbmuxRelay.process.activeRoute { return route }
        if let value = recorded.withLock({ $0 }), !value.isEmpty { return value }
        return "/var/run/usbmuxd"
    }

    private static let recorded = Mutex<String?>(nil)

    static func recordAddress(_ address: String?) { recorded.withLock { $0 = address } }

    static func errnoText(_ code: Int32) -> String {
        guard code > 0, let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
