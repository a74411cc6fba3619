/// Where a `stall` fault makes the device go silent.
public enum VirtualStallPoint: String, Sendable, Codable, Hashable {
    /// usbmuxd never answers `Connect` to this device (clients give up after about 5 s).
    case usbmuxConnect
    /// lockdownd reads requests but never answers (clients give up after 30 s).
    case lockdown
    /// installation_proxy accepts an install but never reports progress or completion
    /// (ideviceinstaller 1.1.1 waits forever: callers need their own deadline).
    case install
}
