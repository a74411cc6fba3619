import Foundation
import SSHTestPeers
import Testing

@testable import HADeployDrivers
@testable import SSHTransport

@Suite("usbmuxd forwarding over SSH to another USB host")
struct UsbmuxForwarderTests {
    static let allowed = FakeUsbmuxd.Device(id: 3, udid: "00008030-001A2B3C4D5E802E")
    static let hidden = FakeUsbmuxd.Device(id: 9, udid: "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678")

    @Test("only allowed devices are listed, announced and connectable; the tunnel carries raw bytes")
    func filtersDevices() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let remote = try TestEnvironment.makeDirectory("hadeploy-usbmuxd")
        defer { TestEnvironment.remove(remote) }
        let usbmuxd = try FakeUsbmuxd(directory: remote, devices: [Self.hidden, Self.allowed])
        defer { usbmuxd.stop() }

        // The allow-list uses the dash-less form on purpose: matching ignores dashes and case.
        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(name: "nas"), remoteSocket: usbmuxd.path,
            allowedUDIDs: ["00008030001a2b3c4d5e802e"])
        #expect(forwarder.socketAddress == "UNIX:" + forwarder.socketPath)
        let attributes = try FileManager.default.attributesOfItem(atPath: forwarder.socketPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let dirAttributes = try FileManager.default.attributesOfItem(
            atPath: (forwarder.socketPath as NSString).deletingLastPathComponent)
        #expect((dirAttributes[.posixPermissions] as? Int) == 0o700)

        // ListDevices: the hidden device is gone.
        let list = try UsbmuxTestClient(path: forwarder.socketPath)
        list.send(["MessageType": "ListDevices"], tag: 1)
        let reply = list.receive()
        list.close()
        let serials = (reply?["DeviceList"] as? [[String: Any]] ?? []).compactMap {
            ($0["Properties"] as? [String: Any])?["SerialNumber"] as? String
        }
        #expect(serials == [Self.allowed.udid])

        // Listen: only the allowed device's events arrive.
        let listen = try UsbmuxTestClient(path: forwarder.socketPath)
        listen.send(["MessageType": "Listen"], tag: 2)
        #expect(listen.receive()?["Number"] as? Int == 0)
        let attached = listen.receive()
        #expect(attached?["MessageType"] as? String == "Attached")
        #expect(UsbmuxFilter.integer(attached?["DeviceID"]) == Self.allowed.id)
        let detached = listen.receive()
        #expect(detached?["MessageType"] as? String == "Detached")
        #expect(UsbmuxFilter.integer(detached?["DeviceID"]) == Self.allowed.id)
        listen.close()

        // Connect to the hidden device is refused by the forwarder, never reaching usbmuxd.
        let refused = try UsbmuxTestClient(path: forwarder.socketPath)
        refused.send(["MessageType": "Connect", "DeviceID": Self.hidden.id, "PortNumber": 32498], tag: 3)
        #expect(UsbmuxFilter.integer(refused.receive()?["Number"]) == 2)
        refused.close()
        #expect(!usbmuxd.seenRequests.contains("Connect \(Self.hidden.id)"))

        // Pair records of a hidden device are refused as well.
        let pair = try UsbmuxTestClient(path: forwarder.socketPath)
        pair.send(["MessageType": "ReadPairRecord", "PairRecordID": Self.hidden.udid], tag: 4)
        #expect(UsbmuxFilter.integer(pair.receive()?["Number"]) == 2)
        pair.close()

        // Connect to the allowed device: Result 0, then the raw stream passes both ways.
        let tunnel = try UsbmuxTestClient(path: forwarder.socketPath)
        tunnel.send(["MessageType": "Connect", "DeviceID": Self.allowed.id, "PortNumber": 32498], tag: 5)
        #expect(UsbmuxFilter.integer(tunnel.receive()?["Number"]) == 0)
        let payload = Data((0..<70_000).map { UInt8($0 % 256) })
        tunnel.sendRaw(payload)
        #expect(tunnel.receiveRaw(payload.count) == payload)
        tunnel.close()
        await forwarder.stop()
    }

    @Test("a Connect to an ID the forwarder has not seen yet is checked against a fresh device list")
    func connectWithoutPriorList() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let remote = try TestEnvironment.makeDirectory("hadeploy-usbmuxd")
        defer { TestEnvironment.remove(remote) }
        let usbmuxd = try FakeUsbmuxd(directory: remote, devices: [Self.hidden, Self.allowed])
        defer { usbmuxd.stop() }
        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(), remoteSocket: usbmuxd.path, allowedUDIDs: [Self.allowed.udid])

        let hidden = try UsbmuxTestClient(path: forwarder.socketPath)
        hidden.send(["MessageType": "Connect", "DeviceID": Self.hidden.id, "PortNumber": 32498], tag: 1)
        #expect(UsbmuxFilter.integer(hidden.receive()?["Number"]) == 2)
        hidden.close()
        let allowed = try UsbmuxTestClient(path: forwarder.socketPath)
        allowed.send(["MessageType": "Connect", "DeviceID": Self.allowed.id, "PortNumber": 32498], tag: 2)
        #expect(UsbmuxFilter.integer(allowed.receive()?["Number"]) == 0)
        allowed.sendRaw(Data("ping".utf8))
        #expect(allowed.receiveRaw(4) == Data("ping".utf8))
        allowed.close()
        #expect(!usbmuxd.seenRequests.contains("Connect \(Self.hidden.id)"))
        await forwarder.stop()
    }

    @Test("the real idevice_id sees only the allowed device through the tunnel")
    func realLibusbmuxdClient() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let remote = try TestEnvironment.makeDirectory("hadeploy-usbmuxd")
        defer { TestEnvironment.remove(remote) }
        let usbmuxd = try FakeUsbmuxd(directory: remote, devices: [Self.hidden, Self.allowed])
        defer { usbmuxd.stop() }
        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(), remoteSocket: usbmuxd.path, allowedUDIDs: [Self.allowed.udid])

        let result = try await TestEnvironment.run(
            "/usr/bin/idevice_id", ["-l"], environment: ["USBMUXD_SOCKET_ADDRESS": forwarder.socketAddress])
        #expect(result.status == 0)
        #expect(result.output.split(separator: "\n").map(String.init) == [Self.allowed.udid])
        await forwarder.stop()
    }

    @Test("dropbear cannot forward UNIX sockets: a clear error")
    func dropbearRefused() async throws {
        let peer = try await SSHPeer.start(.dropbear)
        defer { peer.stopAndClean() }
        let error = await #expect(throws: SSHError.self) {
            try await UsbmuxForwarder.start(ssh: try await peer.config(), allowedUDIDs: [Self.allowed.udid])
        }
        guard case .forwardingUnsupported = error else {
            Issue.record("expected forwardingUnsupported, got \(String(describing: error))")
            return
        }
    }

    @Test("stop removes the socket and its directory")
    func stopCleansUp() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let remote = try TestEnvironment.makeDirectory("hadeploy-usbmuxd")
        defer { TestEnvironment.remove(remote) }
        let usbmuxd = try FakeUsbmuxd(directory: remote, devices: [Self.allowed])
        defer { usbmuxd.stop() }
        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(), remoteSocket: usbmuxd.path, allowedUDIDs: [Self.allowed.udid])
        let directory = (forwarder.socketPath as NSString).deletingLastPathComponent
        await forwarder.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
