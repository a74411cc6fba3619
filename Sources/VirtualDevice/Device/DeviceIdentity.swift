import Foundation

/// The per-device facts that never change once made up: UDID, serial, addresses, chip id.
struct DeviceIdentity: Codable, Sendable, Equatable {
    var udid: String
    var serialNumber: String
    var wifiAddress: String
    var bluetoothAddress: String
    var uniqueChipID: UInt64

    /// A12 (0x8020) and later; the older 0x89xx (A4–A7 era) ids are numerically larger.
    static func isModernChip(_ chipID: Int) -> Bool { chipID >= 0x8020 && chipID < 0x8900 }

    /// Makes up an identity in the right format for the device generation: devices before the A12
    /// have 40-hex-digit UDIDs; A12 and later use `<8 hex chip id>-<16 hex ECID>` (PROTOCOL.md §1.5).
    static func makeUp(chipID: Int, configuredUDID: String?) -> DeviceIdentity {
        var generator = SystemRandomNumberGenerator()
        let ecid = UInt64.random(in: 0x0001_0000_0000_0000...0x000F_FFFF_FFFF_FFFF, using: &generator)
        let udid: String
        if let configuredUDID, !configuredUDID.isEmpty {
            udid = configuredUDID
        } else if isModernChip(chipID) {
            udid = String(format: "%08X-%016llX", chipID, ecid)
        } else {
            udid = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }
                .joined()
        }
        let serialAlphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")
        let serial = "F" + String((0..<11).map { _ in serialAlphabet.randomElement(using: &generator)! })
        var mac: [UInt8] =
            [0xA4, 0xC3, 0x61] + (0..<3).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let wifi = mac.map { String(format: "%02x", $0) }.joined(separator: ":")
        mac[5] &+= 1
        let bluetooth = mac.map { String(format: "%02x", $0) }.joined(separator: ":")
        return DeviceIdentity(
            udid: udid, serialNumber: serial, wifiAddress: wifi, bluetoothAddress: bluetooth,
            uniqueChipID: ecid)
    }
}
