/// Who a message is about: the name a user recognises and the UDID that identifies the device.
public struct DeviceIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    public var name: String?
    public var udid: String

    public init(name: String?, udid: String) {
        self.name = name
        self.udid = udid
    }

    /// "iPad mini 4 (UDID 0000…)" or "device 0000…" when the name is not known yet.
    public var description: String {
        if let name, !name.isEmpty { return "\(name) (UDID \(udid))" }
        return "device \(udid)"
    }
}
