import Foundation

@testable import MobileDevice

/// An in-memory debugserver for protocol tests: parses the client's packets, acknowledges them
/// in ack mode, and answers through a script. Behaves like LLDB's debugserver for the packets
/// hadeploy sends.
final class FakeDebugserver: GDBTransport {
    enum Behaviour {
        /// The app runs and prints a line; it stops only when interrupted.
        case keepsRunning(output: String)
        /// The app crashes right after `c`.
        case crashesOnLaunch
        /// `A` is refused with this error.
        case refusesLaunch(String)
        /// No reply at all to `c`, and no reaction to interrupts.
        case hangs
    }

    private(set) var received: [String] = []
    private(set) var interrupts = 0
    private(set) var nacksFromClient = 0
    private(set) var acksFromClient = 0
    var corruptNextReply = false
    private var outgoing: [UInt8] = []
    private var incoming: [UInt8] = []
    private let behaviour: Behaviour

    init(_ behaviour: Behaviour) { self.behaviour = behaviour }

    func send(_ bytes: [UInt8]) throws {
        incoming += bytes
        parse()
    }

    func receive(maximum: Int, timeoutMilliseconds: UInt32) throws -> [UInt8] {
        guard !outgoing.isEmpty else {
            // A real connection would wait; keep the test fast but honour the contract.
            Thread.sleep(forTimeInterval: min(Double(timeoutMilliseconds) / 1000, 0.01))
            return []
        }
        let chunk = Array(outgoing.prefix(maximum))
        outgoing.removeFirst(chunk.count)
        return chunk
    }

    private func parse() {
        while let first = incoming.first {
            switch first {
            case UInt8(ascii: "+"):
                acksFromClient += 1
                incoming.removeFirst()
            case UInt8(ascii: "-"):
                nacksFromClient += 1
                incoming.removeFirst()
            case 0x03:
                incoming.removeFirst()
                interrupts += 1
                if case .hangs = behaviour { continue }
                reply("T11thread:1;", ack: false)
            case UInt8(ascii: "$"):
                guard let hash = incoming.firstIndex(of: UInt8(ascii: "#")), incoming.count >= hash + 3 else {
                    return
                }
                let payload = String(
                    decoding: GDBPacket.decodePayload(Array(incoming[1..<hash])), as: UTF8.self)
                incoming.removeFirst(hash + 3)
                received.append(payload)
                answer(payload)
            default:
                incoming.removeFirst()
            }
        }
    }

    private func answer(_ packet: String) {
        switch packet {
        case "c":
            outgoing += Array("+".utf8)
            switch behaviour {
            case .keepsRunning(let output): reply("O" + GDBPacket.hexEncode(output), ack: false)
            case .crashesOnLaunch: reply("T06thread:1;", ack: false)
            default: break
            }
        case "qLaunchSuccess": reply("OK")
        case "qProcessInfo": reply("pid:1f4;parent-pid:1;")
        case "D": reply("OK")
        case "k": reply("X09")
        case _ where packet.hasPrefix("vAttachName;"): reply("T13thread:1;")
        case _ where packet.hasPrefix("A"):
            if case .refusesLaunch(let error) = behaviour { reply(error) } else { reply("OK") }
        case _ where packet.hasPrefix("Q"): reply("OK")
        default: reply("")
        }
    }

    private func reply(_ payload: String, ack: Bool = true) {
        var bytes = ack ? Array("+".utf8) : []
        var packet = GDBPacket.encode(payload)
        if corruptNextReply {
            corruptNextReply = false
            // Wrong checksum first; the client must answer '-' and take the resend.
            var broken = packet
            broken[broken.count - 1] =
                broken[broken.count - 1] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            bytes += broken
            packet = GDBPacket.encode(payload)
        }
        bytes += packet
        outgoing += bytes
    }
}
