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
}
