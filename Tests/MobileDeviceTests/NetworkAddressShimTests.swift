import CIMobileDevice
import Foundation
import Testing

/// hadeploy_network_address (CIMobileDevice/shim.h): usbmuxd's NetworkAddress in either layout (BSD
/// from Apple's usbmuxd and the twin, Linux from usbmuxd2) becomes this host's sockaddr, as
/// libimobiledevice 1.4.0 wants it in conn_data.
@Suite struct NetworkAddressShimTests {
    private func read(_ bytes: [UInt8]) -> (length: Int, address: sockaddr_storage) {
        let padded = bytes + [UInt8](repeating: 0, count: max(0, 200 - bytes.count))
        var address = sockaddr_storage()
        let length = padded.withUnsafeBufferPointer {
            hadeploy_network_address($0.baseAddress, $0.count, &address)
        }
        return (Int(length), address)
    }

    @Test func bothLayoutsOfAnIPv4AddressGiveTheSameSockaddr() {
        for bytes: [UInt8] in [
            [0x10, 0x02, 0xF2, 0x7E, 192, 168, 1, 42], [0x02, 0x00, 0xF2, 0x7E, 192, 168, 1, 42],
        ] {
            let (length, storage) = read(bytes)
            #expect(length == MemoryLayout<sockaddr_in>.size)
            let address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
            #expect(Int32(address.sin_family) == AF_INET)
            #expect(UInt16(bigEndian: address.sin_port) == 62078)
            #expect(UInt32(bigEndian: address.sin_addr.s_addr) == 0xC0A8_012A)
        }
    }

    @Test func bothLayoutsOfAnIPv6AddressGiveTheSameSockaddr() {
        var bsd = [UInt8](repeating: 0, count: 28)
        bsd[0] = 28
        bsd[1] = 30
        bsd[8] = 0xFE
        bsd[9] = 0x80
        bsd[23] = 0x01
        var linux = bsd
        linux[0] = 10
        linux[1] = 0
        for bytes in [bsd, linux] {
            let (length, storage) = read(bytes)
            #expect(length == MemoryLayout<sockaddr_in6>.size)
            let address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
            #expect(Int32(address.sin6_family) == AF_INET6)
            let raw = withUnsafeBytes(of: address.sin6_addr) { [UInt8]($0) }
            #expect(raw == [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [0x01])
        }
    }

    @Test func otherBytesAreRefused() {
        #expect(read([0x10, 0x07, 0, 0, 1, 2, 3, 4]).length == 0)
        #expect(read([0x17, 0x00, 0, 0]).length == 0)
        #expect(read([]).length == 0)
    }
}
