import Foundation
import HADeployCore
import Testing

/// The one usbmuxd codec (the relay, the twins' usbmuxd and the USB-host filter all use it).
@Suite("usbmuxd framing")
struct UsbmuxFrameTests {
    @Test("frames round-trip with a little-endian header and split input waits for more bytes")
    func roundTrip() throws {
        let frame = UsbmuxFrame.plist(["MessageType": "ListDevices"], tag: 7)
        let bytes = frame.encoded
        #expect(bytes.prefix(4) == Data([UInt8(bytes.count & 0xff), UInt8(bytes.count >> 8), 0, 0]))
        #expect(bytes[4] == 1 && bytes[8] == 8 && bytes[12] == 7)
        var partial = Data(bytes.prefix(20))
        #expect(try UsbmuxFrame.take(from: &partial) == nil)
        #expect(partial.count == 20, "a partial frame is left where it was")
        var doubled = bytes + bytes
        #expect(try UsbmuxFrame.take(from: &doubled) == frame)
        #expect(try UsbmuxFrame.take(from: &doubled) == frame)
        #expect(doubled.isEmpty)
        #expect(frame.plist?["MessageType"] as? String == "ListDevices")
        #expect(UsbmuxFrame.result(3, tag: 9).plist?["Number"] as? Int == 3)
    }

    @Test("a length no usbmuxd sends is refused at its header, whichever side reads it")
    func lengthsOutOfBoundsAreRefused() throws {
        func header(length: UInt32) -> Data {
            var data = Data()
            for word in [length, 1, 8, 0] as [UInt32] {
                withUnsafeBytes(of: word.littleEndian) { data.append(contentsOf: $0) }
            }
            return data
        }
        var garbage = Data(repeating: 0xff, count: 16)
        #expect(throws: UsbmuxFrame.Malformed.self) { try UsbmuxFrame.take(from: &garbage) }
        #expect(throws: UsbmuxFrame.Malformed.self) { try UsbmuxFrame.header(header(length: 15)) }
        let biggest = UInt32(UsbmuxFrame.maximumSize)
        #expect(try UsbmuxFrame.header(header(length: biggest)).payloadLength == UsbmuxFrame.maximumSize - 16)
        #expect(throws: UsbmuxFrame.Malformed.self) { try UsbmuxFrame.header(header(length: biggest + 1)) }
        // Not a plist message: no dictionary, whatever the payload.
        let binary = UsbmuxFrame(version: 0, message: 3, tag: 1, payload: Data("<plist/>".utf8))
        #expect(binary.plist == nil)
    }
}
