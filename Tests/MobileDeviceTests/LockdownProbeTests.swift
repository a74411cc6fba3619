import Foundation
import Testing

@testable import MobileDevice

@Suite struct LockdownProbeTests {
    /// usbmuxd hands a Wi-Fi device's address over as the BSD sockaddr macOS keeps (PROTOCOL.md §1).
    @Test func aNetworkAddressNamesTheHostTheProbeConnectsTo() {
        let ipv4 = Data([0x10, 0x02, 0xF2, 0x7E, 192, 168, 1, 42] + [UInt8](repeating: 0, count: 8))
        #expect(LockdownProbe.host(ofNetworkAddress: ipv4) == "192.168.1.42")
        var ipv6 = [UInt8](repeating: 0, count: 28)
        ipv6[0] = 0x1C
        ipv6[1] = 0x1E
        ipv6[8] = 0xFE
        ipv6[9] = 0x80
        ipv6[22] = 0x12
        ipv6[23] = 0x34
        #expect(LockdownProbe.host(ofNetworkAddress: Data(ipv6)) == "fe80:0:0:0:0:0:0:1234")
        #expect(LockdownProbe.host(ofNetworkAddress: Data([0x10, 0x01, 0, 0])) == nil)
        #expect(LockdownProbe.host(ofNetworkAddress: Data([0x10, 0x07, 0, 0, 1, 2, 3, 4])) == nil)
    }

    /// usbmuxd2 on Linux (since 2023-11) sends its host's sockaddr: a two-byte little-endian family.
    @Test func aLinuxNetworkAddressNamesTheSameHost() {
        let ipv4 = Data([0x02, 0x00, 0, 0, 192, 168, 1, 42] + [UInt8](repeating: 0, count: 120))
        #expect(LockdownProbe.host(ofNetworkAddress: ipv4) == "192.168.1.42")
        var ipv6 = [UInt8](repeating: 0, count: 128)
        ipv6[0] = 10
        ipv6[8] = 0xFE
        ipv6[9] = 0x80
        ipv6[23] = 0x01
        #expect(LockdownProbe.host(ofNetworkAddress: Data(ipv6)) == "fe80:0:0:0:0:0:0:1")
        #expect(LockdownProbe.host(ofNetworkAddress: Data([0x07, 0x00, 0, 0, 1, 2, 3, 4])) == nil)
    }
}
