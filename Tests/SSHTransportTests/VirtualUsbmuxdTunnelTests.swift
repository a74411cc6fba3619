import Foundation
import SSHTestPeers
import TestSupport
import Testing

@testable import SSHTransport

#if canImport(Glibc)
    import Glibc
#endif

/// The forwarder in front of the team's virtual usbmuxd (emulated lockdownd, TLS, pair records), with
/// the real libimobiledevice tools on this side of the SSH tunnel.
@Suite("usbmuxd forwarding to the virtual usbmuxd, used by the real idevice tools")
struct VirtualUsbmuxdTunnelTests {
    @Test("idevice_id lists only the allowed device; ideviceinfo reaches it through lockdown and TLS")
    func toolsThroughTunnel() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        // Short path: UNIX socket paths are limited to 108 bytes.
        let directory = try TestEnvironment.makeDirectory("hd-vmux")
        defer { TestEnvironment.remove(directory) }
        let allowed = "00008020-00115C2A0E38002E"
        let hidden = "00008020-000A1B2C3D4E802E"
        try """
        version: 1
        flavours:
          modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
        devices:
          mini4: {name: iPad mini 4, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern,
                  transport: usb, udid: "\(allowed)"}
          mini5: {name: iPad mini 5, product_type: "iPad11,1", ios: "16.7", arch: arm64, flavour: modern,
                  transport: usb, udid: "\(hidden)"}
        """.write(to: directory.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        let socket = directory.appendingPathComponent("usbmuxd.sock")
        let twins = try await VirtualTwinsProcess(
            project: directory, only: ["mini4", "mini5"], socket: socket,
            state: directory.appendingPathComponent("state"), home: directory)
        defer { twins.stop() }
        // sshd opens the remote socket as the login user (PLATFORM-NOTES §2).
        chmod(socket.path, 0o666)

        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(name: "nas"), remoteSocket: socket.path, allowedUDIDs: [allowed])
        let environment = ["USBMUXD_SOCKET_ADDRESS": forwarder.socketAddress]

        let list = try await TestEnvironment.run("/usr/bin/idevice_id", ["-l"], environment: environment)
        #expect(list.status == 0)
        #expect(list.output.split(separator: "\n").map(String.init) == [allowed])

        let info = try await TestEnvironment.run(
            "/usr/bin/ideviceinfo", ["-u", allowed, "-k", "ProductType"], environment: environment)
        #expect(info.status == 0, "\(info.output)")
        #expect(info.output == "iPad5,1\n")

        let refused = try await TestEnvironment.run(
            "/usr/bin/ideviceinfo", ["-u", hidden, "-k", "ProductType"], environment: environment)
        #expect(refused.status != 0)
        #expect(!refused.output.contains("iPad11,1"))

        // Without the forwarder the other device is there: the refusal above is the forwarder's.
        let direct = try await TestEnvironment.run(
            "/usr/bin/ideviceinfo", ["-u", hidden, "-k", "ProductType"],
            environment: ["USBMUXD_SOCKET_ADDRESS": twins.address])
        #expect(direct.output == "iPad11,1\n", "\(direct.output)")

        await forwarder.stop()
    }
}
