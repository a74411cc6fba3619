import Testing

@testable import MobileDevice

@Suite struct GDBPacketTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Checksums as the real idevicedebug sends them (PROTOCOL.md §7.2).
    @Test func checksumsMatchTheWire() {
        #expect(text(GDBPacket.encode("qLaunchSuccess")) == "$qLaunchSuccess#A5")
        #expect(text(GDBPacket.encode("Hc0")) == "$Hc0#DB")
        #expect(text(GDBPacket.encode("c")) == "$c#63")
        #expect(text(GDBPacket.encode("k")) == "$k#6B")
        #expect(text(GDBPacket.encode("OK")) == "$OK#9A")
    }

    @Test func launchArgumentsPacketMatchesIdevicedebug() {
        let packet = GDBPacket.launchArguments(["/a", "arg1", "arg 2"])
        #expect(packet == "A4,0,2F61,8,1,61726731,10,2,6172672032")
    }

    @Test func specialCharactersAreEscaped() {
        let encoded = text(GDBPacket.encode("a#b$c}d*e"))
        #expect(encoded.hasPrefix("$a}\u{03}b}\u{04}c}]d}\u{0A}e#"))
        let body = Array(encoded.utf8.dropFirst().prefix { $0 != UInt8(ascii: "#") })
        #expect(text(GDBPacket.decodePayload(body)) == "a#b$c}d*e")
    }

    @Test func runLengthEncodingIsExpanded() {
        // '*' followed by ' ' (32) repeats the previous byte 32 - 29 = 3 more times.
        #expect(text(GDBPacket.decodePayload(Array("0* 1".utf8))) == "00001")
    }

    @Test func hexRoundTrip() {
        #expect(GDBPacket.hexEncode("FOO=bar") == "464F4F3D626172")
        #expect(GDBPacket.hexDecode("464f4f3d626172") == "FOO=bar")
        #expect(GDBPacket.hexDecode("4") == nil)
    }

    @Test func stopRepliesAreClassified() {
        #expect(GDBStopReply("T11thread:1;") == .stopped(signal: 0x11))
        #expect(GDBStopReply("T11thread:1;")?.isBenignStop == true)
        #expect(GDBStopReply("T06thread:1;")?.isBenignStop == false)
        #expect(GDBStopReply("W00") == .exited(status: 0))
        #expect(GDBStopReply("X09") == .terminated(signal: 9))
        #expect(GDBStopReply("OK") == nil)
    }
}
