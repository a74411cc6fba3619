import Foundation
import MulticastDNS
import TestSupport
import Testing

/// hadeploy's multicast DNS: the message codec, and the browser against a real responder
/// (python-zeroconf, pinned in .venv-zeroconf) announcing an iOS device's `_apple-mobdev2._tcp`.
@Suite(.serialized)
struct MulticastDNSTests {
    @Test func aResponseRoundTripsThroughTheCodec() throws {
        let message = DNSMessage(
            id: 7, flags: 0x8400,
            answers: [
                .init(
                    name: "_apple-mobdev2._tcp.local",
                    data: .ptr("a4:c3:61:00:00:01@fe80::1._apple-mobdev2._tcp.local"))
            ],
            additionals: [
                .init(
                    name: "a4:c3:61:00:00:01@fe80::1._apple-mobdev2._tcp.local",
                    data: .srv(priority: 0, weight: 0, port: 32_498, target: "iPad.local"), cacheFlush: true),
                .init(name: "a4:c3:61:00:00:01@fe80::1._apple-mobdev2._tcp.local", data: .txt(["a=1"])),
                .init(name: "iPad.local", data: .a("192.168.1.40"), cacheFlush: true),
                .init(name: "iPad.local", data: .aaaa("fe80::1")),
            ])
        let decoded = try DNSMessage(decoding: message.encoded())
        #expect(decoded.id == 7 && decoded.isResponse)
        #expect(decoded.answers == message.answers)
        #expect(Array(decoded.additionals.prefix(3)) == Array(message.additionals.prefix(3)))
        #expect(decoded.additionals[3].data == .aaaa("fe80:0:0:0:0:0:0:1"))
    }

    /// Responders compress names; a pointer that loops is a malformed message, not a hang.
    @Test func compressedNamesAreFollowedAndALoopIsRefused() throws {
        // Header: a response with one answer; the PTR's target points back at the question's name.
        var bytes: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0]
        let owner = bytes.count
        bytes += [5] + Array("_test".utf8) + [4] + Array("_tcp".utf8) + [5] + Array("local".utf8) + [0]
        bytes += [0, 12, 0, 1, 0, 0, 0, 120, 0, 7]
        bytes += [4] + Array("ipad".utf8) + [0xC0, UInt8(owner)]
        let decoded = try DNSMessage(decoding: Data(bytes))
        #expect(decoded.answers.first?.data == .ptr("ipad._test._tcp.local"))

        let loop: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xC0, 12]
        #expect(throws: DNSMessage.Malformed.self) { try DNSMessage(decoding: Data(loop)) }
        #expect(throws: DNSMessage.Malformed.self) { try DNSMessage(decoding: Data([0, 0, 0x84])) }
    }

    /// python-zeroconf announces an iPad as iOS does for Wi-Fi sync; hadeploy's one-shot browse finds
    /// its instance (the Wi-Fi MAC address in its name), host, port and address.
    /// python-zeroconf announcing `<mac>@fe80::1` for Wi-Fi sync at `address`, on 127.0.0.1, until
    /// stopped.
    static func responder(mac: String, address: String, server: String) async throws -> BackgroundCommand {
        let root = HADeployBinary.repositoryRoot
        let setup = try await ToolRun.run(root.appendingPathComponent("scripts/zeroconf-venv.sh").path, [])
        #expect(setup.status == 0, "scripts/zeroconf-venv.sh: \(setup.stderr)")
        let script = """
            import sys, time, socket
            from zeroconf import Zeroconf, ServiceInfo
            zc = Zeroconf(interfaces=["127.0.0.1"])
            info = ServiceInfo("_apple-mobdev2._tcp.local.", "\(mac)@fe80::1._apple-mobdev2._tcp.local.",
                addresses=[socket.inet_aton("\(address)")], port=32498, server="\(server).", properties={})
            zc.register_service(info)
            print("ready", flush=True)
            sys.stdin.read()
            zc.unregister_service(info)
            zc.close()
            """
        let responder = try BackgroundCommand(
            root.appendingPathComponent(".venv-zeroconf/bin/python").path, ["-c", script], in: root,
            environment: [:], keepStandardInputOpen: true)
        #expect(try await responder.line(startingWith: "ready", within: 30) != nil, "\(responder.output)")
        return responder
    }

    @Test func theBrowserFindsWhatARealResponderAnnounces() async throws {
        let mac =
            "a4:c3:61:\(String(format: "%02x:%02x:%02x", UInt8.random(in: 0...255), UInt8.random(in: 0...255), UInt8.random(in: 0...255)))"
        let responder = try await Self.responder(mac: mac, address: "127.0.0.1", server: "zc-ipad.local")
        defer { responder.stop() }

        // Every answer of the window: other suites' twins announce on loopback too, and the first answer
        // need not be this responder's.
        let services = try MDNSBrowser.browse(within: .seconds(3), interfaces: ["127.0.0.1"])
        let found = try #require(services.first { $0.wifiMACAddress == mac }, "\(services)")
        #expect(found.host?.lowercased() == "zc-ipad.local")
        #expect(found.port == 32_498)
        #expect(found.addresses.contains("127.0.0.1"))
    }
}
