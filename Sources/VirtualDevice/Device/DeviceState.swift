import Foundation

/// What a device remembers across emulator restarts (`<state>/devices/<name>/state.json`).
struct DeviceState: Codable, Sendable {
    var identity: DeviceIdentity
    var trustedHosts: [TrustedHost] = []
    /// The pre-paired record was made once; an unpair later is not silently undone on restart.
    var prePairingDone = false
    var escrowBag = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
    var developerImageSignature: Data?
    var installedApps: [VirtualInstalledApp] = []
    var bootCount = 1
    /// When the device last booted (nil: before the emulator remembered it; taken as first start).
    var bootedAt: Date?
    /// Battery and flash as set through the control socket (nil: on its charger, full).
    var health: VirtualDeviceHealth?
    /// `EnableWifiConnections` (domain com.apple.mobile.wireless_lockdown): what Finder's "Show this
    /// iPad when on Wi-Fi" and `hadeploy pair` turn on over USB. A network twin has it on.
    var wifiConnections: Bool?
}
