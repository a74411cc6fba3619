import Foundation
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// A Wi-Fi device is used only where it proves it holds its pair record's DeviceCertificate. The
/// attacker is a real process on this machine (Python's own TLS server, OpenSSL's self-signed
/// certificate) that answers lockdownd's unauthenticated questions as the paired iPad would, and a
/// real mDNS responder (python-zeroconf) that announces it under the iPad's name.
@Suite(.serialized) struct WiFiIdentityTests {
    /// A lockdownd impostor at `address`:62078 claiming `udid`: it answers GetValue with the UDID,
    /// StartSession with EnableSessionSSL, then TLS with its own certificate, and prints every
    /// request it gets, inside TLS too.
    static let impostor = """
        import socket, ssl, plistlib, struct, sys, threading
        address, udid, cert, key = sys.argv[1:5]
        server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, 62078)); server.listen(8)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); context.load_cert_chain(cert, key)
        context.minimum_version = ssl.TLSVersion.TLSv1; context.set_ciphers("ALL:@SECLEVEL=0")
        def read(s, n):
            data = b""
            while len(data) < n:
                part = s.recv(n - len(data))
                if not part: raise EOFError("closed")
                data += part
            return data
        def receive(s): return plistlib.loads(read(s, struct.unpack(">I", read(s, 4))[0]))
        def send(s, value):
            body = plistlib.dumps(value); s.sendall(struct.pack(">I", len(body)) + body)
        def serve(c):
            try:
                while True:
                    request = receive(c); print("plain", request.get("Request"), flush=True)
                    if request.get("Request") == "GetValue":
                        send(c, {"Request": "GetValue", "Key": request.get("Key"), "Value": udid})
                    elif request.get("Request") == "StartSession":
                        send(c, {"Request": "StartSession", "SessionID": "S", "EnableSessionSSL": True})
                        c = context.wrap_socket(c, server_side=True); print("tls", flush=True)
                        while True: print("inside", receive(c).get("Request"), flush=True)
            except Exception as error: print("closed", type(error).__name__, flush=True)
        print("ready", flush=True)
        while True: threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()
        """

    struct Impostor {
        let address: String
        let process: BackgroundCommand
    }

    static func startImpostor(claiming udid: String, in directory: URL) async throws -> Impostor {
        let key = directory.appendingPathComponent("impostor.key").path
        let cert = directory.appendingPathComponent("impostor.pem").path
        let made = try await ToolRun.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                "-subj", "/CN=iPad",
            ])
        #expect(made.status == 0, "openssl req: \(made.stderr)")
        let address = "127.78.\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
        let process = try BackgroundCommand(
            "/usr/bin/python3", ["-c", impostor, address, udid, cert, key], in: directory, environment: [:])
        #expect(try await process.line(startingWith: "ready", within: 30) != nil, "\(process.output)")
        return Impostor(address: address, process: process)
    }

    /// The paired Wi-Fi twin (its UDID, its pair record as the route's usbmuxd keeps it, its
    /// address) and an impostor claiming its UDID, in a private folder.
    struct Scene {
        let udid: String
        let record: Data
        let real: String
        let directory: URL
        let impostor: Impostor

        static func start() async throws -> Scene {
            let emulator = try await SharedEmulator.shared.context()
            let udid = await emulator.udid(SharedEmulator.Device.wifiIdentity)
            let record = try #require(WiFiDiscovery.upstreamPairRecord(udid: udid, upstream: emulator.socket))
            let real = try #require(try await emulator.daemon.networkAddress(udid: udid))
            let directory = try WiFiIdentityTests.directory()
            let impostor = try await WiFiIdentityTests.startImpostor(claiming: udid, in: directory)
            return Scene(udid: udid, record: record, real: real, directory: directory, impostor: impostor)
        }

        func stop() {
            impostor.process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func directory() throws -> URL {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "wifi-identity-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return directory
    }

    @Test func onlyTheDeviceThatHoldsThePairRecordsCertificateIsProven() async throws {
        let scene = try await Scene.start()
        defer { scene.stop() }
        let (udid, record, real, impostor) = (scene.udid, scene.record, scene.real, scene.impostor)

        // What anyone may answer, the impostor answers as the iPad does.
        #expect(WiFiDiscovery.uniqueDeviceID(at: impostor.address) == udid)
        #expect(WiFiIdentity.prove(udid: udid, at: real, record: record) == .proven)
        guard case .unproven(let why) = WiFiIdentity.prove(udid: udid, at: impostor.address, record: record)
        else {
            Issue.record("the impostor at \(impostor.address) was taken for \(udid)")
            return
        }
        #expect(why.contains("a certificate other than the pair record's DeviceCertificate"), "\(why)")
        #expect(
            WiFiIdentity.prove(udid: udid, at: impostor.address, record: nil)
                == .unproven("no pair record for it on this host: pair it over USB first (hadeploy pair)"))
        // A record whose host the device no longer knows (its trust was reset): said so, with the way on.
        var fields = try #require(
            try PropertyListSerialization.propertyList(from: record, format: nil) as? [String: Any])
        fields["HostID"] = UUID().uuidString.uppercased()
        let forgotten = try PropertyListSerialization.data(fromPropertyList: fields, format: .xml, options: 0)
        guard case .unproven(let reset) = WiFiIdentity.prove(udid: udid, at: real, record: forgotten) else {
            Issue.record("a host the device does not know was proven")
            return
        }
        #expect(reset.contains("InvalidHostID") && reset.contains("hadeploy pair"), "\(reset)")
        // The impostor completed its handshake and was never sent a request inside it.
        try await Task.sleep(for: .milliseconds(300))
        #expect(impostor.process.output.contains("tls"), "\(impostor.process.output)")
        #expect(!impostor.process.output.contains("inside"), "\(impostor.process.output)")
    }

    /// Discovery as a run and `hadeploy muxer` use it: a spoofed mDNS answer, and an `address:` that
    /// points at the impostor, never become the device's address; the real one does.
    @Test func discoveryNeverListsAnImpostorFoundOverMDNSOrAtAnAddress() async throws {
        let scene = try await Scene.start()
        defer { scene.stop() }
        let (udid, record, real, directory, impostor) = (
            scene.udid, scene.record, scene.real, scene.directory, scene.impostor
        )
        let records = directory.appendingPathComponent("records")
        let folder = PairRecordFolder(folder: records, fileSystem: TestHost.fileSystem)
        // The record knows the device's own Wi-Fi MAC address (what `hadeploy pair` keeps).
        var fields = try #require(
            try PropertyListSerialization.propertyList(from: record, format: nil) as? [String: Any])
        fields["WiFiMACAddress"] = "a4:c3:61:00:00:01"
        folder.save(
            udid: udid,
            record: try PropertyListSerialization.data(fromPropertyList: fields, format: .xml, options: 0))
        let relay = UsbmuxRelay()
        relay.setPairRecords(folder)
        let discovery = WiFiDiscovery()

        let atAddress = discovery.round(missing: [udid], addresses: [udid: impostor.address], relay: relay)
        #expect(atAddress.isEmpty, "\(atAddress)")
        let note = try #require(discovery.note(for: udid))
        #expect(note.contains("identity was not proven"), "\(note)")

        // A real mDNS responder announces the impostor under a name of the iPad's kind.
        let responder = try await MulticastDNSTests.responder(
            mac: "a4:c3:61:66:66:66", address: impostor.address, server: "impostor.local")
        defer { responder.stop() }
        let overMDNS = discovery.round(missing: [udid], addresses: [:], relay: relay)
        #expect(!overMDNS.contains { $0.address == impostor.address }, "\(overMDNS)")
        let spoofed = discovery.note(for: udid) ?? ""
        #expect(spoofed.contains("over mDNS as a4:c3:61:66:66:66"), "the browse saw the answer: \(spoofed)")
        #expect(spoofed.contains("identity was not proven"), "\(spoofed)")

        // The device itself, at its own address, is found; later answers for the impostor's
        // address do not replace it.
        let found = discovery.round(missing: [udid], addresses: [udid: real], relay: relay)
        #expect(found.map(\.address) == [real], "\(found) \(discovery.note(for: udid) ?? "")")
        relay.add(found)
        let again = discovery.round(missing: nil, addresses: [udid: impostor.address], relay: relay)
        #expect(!again.contains { $0.address == impostor.address }, "\(again)")
        #expect(relay.wifiDevices.map(\.address) == [real])
        #expect(!impostor.process.output.contains("inside"), "\(impostor.process.output)")

        // The device itself announcing a private Wi-Fi address (not the record's MAC): found by asking
        // it, and said so.
        let own = try await MulticastDNSTests.responder(
            mac: "a4:c3:61:77:77:77", address: real, server: "private.local")
        defer { own.stop() }
        let privately = discovery.round(missing: [udid], addresses: [:], relay: relay)
        let device = try #require(privately.first { $0.address == real }, "\(privately)")
        #expect(
            device.foundBy.contains(
                "a private Wi-Fi address a4:c3:61:77:77:77, not its own a4:c3:61:00:00:01"),
            "\(device.foundBy)")
    }
}
