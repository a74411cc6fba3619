import Foundation
import HADeployCore

/// Decides which usbmuxd messages pass through the forwarder: only devices whose UDID is allowed are
/// listed, announced, connectable or have pair records read.
///
/// Device IDs are learned from device lists and Attached events, since Connect names only the ID.
final class UsbmuxFilter {
    private let allowed: Set<String>
    /// DeviceID → allowed?
    private(set) var knownDevices: [Int: Bool] = [:]

    init(allowedUDIDs: some Sequence<String>) {
        allowed = Set(allowedUDIDs.map(Self.normalize))
    }

    /// libusbmuxd inserts a dash into 24-character serials (PROTOCOL.md §1.5); compare without dashes.
    static func normalize(_ udid: String) -> String {
        udid.replacingOccurrences(of: "-", with: "").lowercased()
    }

    func isAllowed(udid: String) -> Bool { allowed.contains(Self.normalize(udid)) }

    enum RequestDecision: Equatable {
        case forward
        /// Answer locally with a Result of this number (2 = BADDEV), never forwarded.
        case refuse(Int)
        /// Connect to an ID not seen yet: list the devices first, then ask again.
        case lookup(deviceID: Int)
        /// After forwarding, the reply to this Connect turns the stream raw.
        case forwardConnect
    }

    func decide(request frame: UsbmuxFrame) -> RequestDecision {
        guard let plist = frame.plist else {
            // The binary protocol (version 0) cannot be filtered: refuse, libusbmuxd speaks plist.
            return .refuse(1)
        }
        let type = plist["MessageType"] as? String ?? ""
        switch type {
        case "Connect":
            guard let id = Self.integer(plist["DeviceID"]) else { return .refuse(2) }
            switch knownDevices[id] {
            case true?: return .forwardConnect
            case false?: return .refuse(2)
            case nil: return .lookup(deviceID: id)
            }
        case "ReadPairRecord", "SavePairRecord", "DeletePairRecord":
            guard let udid = plist["PairRecordID"] as? String, isAllowed(udid: udid) else {
                return .refuse(2)
            }
            return .forward
        default:
            return .forward
        }
    }

    /// Returns the frame to pass to the client (possibly rewritten), or nil to drop it.
    func filter(reply frame: UsbmuxFrame) -> UsbmuxFrame? {
        guard var plist = frame.plist else { return frame }
        if let list = plist["DeviceList"] as? [Any] {
            let kept = list.filter { entry in
                guard let device = entry as? [String: Any] else { return false }
                return learn(device)
            }
            if kept.count == list.count { return frame }
            plist["DeviceList"] = kept
            return .plist(plist, tag: frame.tag)
        }
        switch plist["MessageType"] as? String {
        case "Attached":
            return learn(plist) ? frame : nil
        case "Detached", "Paired":
            guard let id = Self.integer(plist["DeviceID"]) else { return nil }
            return knownDevices[id] == true ? frame : nil
        default:
            return frame
        }
    }

    /// Records a device entry (`{DeviceID, Properties: {SerialNumber}}`) and returns whether it is allowed.
    @discardableResult
    func learn(_ device: [String: Any]) -> Bool {
        let properties = device["Properties"] as? [String: Any] ?? [:]
        guard let id = Self.integer(device["DeviceID"]) ?? Self.integer(properties["DeviceID"]),
            let serial = properties["SerialNumber"] as? String
        else { return false }
        let ok = isAllowed(udid: serial)
        knownDevices[id] = ok
        return ok
    }

    /// Marks IDs from a fresh device list; IDs not in it stay unknown (refused on Connect).
    func learn(deviceListReply frame: UsbmuxFrame) {
        guard let list = frame.plist?["DeviceList"] as? [Any] else { return }
        for case let device as [String: Any] in list { learn(device) }
    }

    static func integer(_ value: Any?) -> Int? {
        switch value {
        case let number as Int: return number
        case let number as NSNumber: return number.intValue
        case let number as UInt64: return Int(exactly: number)
        default: return nil
        }
    }
}
