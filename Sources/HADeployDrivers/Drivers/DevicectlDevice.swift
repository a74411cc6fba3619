import Foundation

/// One device as devicectl's JSON describes it (`list devices` entries, `device info details` result).
public struct DevicectlDevice: Sendable, Hashable, Codable {
    /// The CoreDevice identifier (a UUID), what devicectl itself prefers for `--device`.
    public var identifier: String
    public var udid: String?
    public var name: String
    public var productType: String?
    public var marketingName: String?
    /// `iOS`, `iPadOS` is reported as `iOS`.
    public var platform: String?
    public var osVersion: String?
    /// `physical` or `virtual`.
    public var reality: String?
    /// `wired`, `localNetwork`...
    public var transportType: String?
    /// `connected`, `disconnected`, `unavailable`.
    public var tunnelState: String?
    public var pairingState: String?
    /// `enabled` or `disabled`: iOS 16+ refuses to launch development apps without it.
    public var developerModeStatus: String?
    public var cpuType: String?

    /// Whether `value` names this device the way `--device` accepts (UDID, identifier or name).
    public func matches(_ value: String) -> Bool {
        [identifier, udid, name].compactMap { $0 }.contains {
            $0.caseInsensitiveCompare(value) == .orderedSame
        }
    }
}
