import Foundation
import Logging
import SSHTestPeers
import TestSupport
import Testing
import VirtualDevice

@testable import SSHTransport

/// The forwarder in front of the team's virtual usbmuxd (emulated lockdownd, TLS, pair records), with
/// the real libimobiledevice tools on this side of the SSH tunnel.
@Suite("usbmuxd forwarding to the virtual usbmuxd, used by the real idevice tools")
struct VirtualUsbmuxdTunnelTests {
    static func profile(_ name: String, _ productType: String) -> VirtualDeviceProfile {
        var profile = VirtualDeviceProfile.preset(productType: productType, iOSVersion: nil)!
        profile.name = name
        return profile
    }

    @Test("idevice_id lists only the allowed device; ideviceinfo reaches it through lockdown and TLS")
    func toolsThroughTunnel() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        // Short path: UNIX socket paths are limited to 108 bytes.
        let directory = try TestEnvironment.makeDirectory("hd-vmux")
        defer { TestEnvironment.remove(directory) }
        let socketPath = directory.appendingPathComponent("usbmuxd.sock").path
        let daemon = try VirtualUsbmuxd(
            profiles: [Self.profile("ipad2", "iPad2,1"), Self.profile("mini4", "iPad5,1")],
            stateDirectory: directory, address: .unixSocket(socketPath),
            logger: Logger(label: "vdev", factory: { _ in SwiftLogNoOpLogHandler() }),
            fileSystem: TestHost.fileSystem)
        _ = try await daemon.start()
        // sshd opens the remote socket as the login user (PLATFORM-NOTES §2).
        chmod(socketPath, 0o666)
        let devices = await daemon.devices()
        let allowed = try #require(devices.first { $0.name == "mini4" }).udid
        let hidden = try #require(devices.first { $0.name == "ipad2" }).udid

        let forwarder = try await UsbmuxForwarder.start(
            ssh: try await peer.config(name: "nas"), remoteSocket: socketPath, allowedUDIDs: [allowed])
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
        #expect(!refused.output.contains("iPad2,1"))

        await forwarder.stop()
        await daemon.stop()
    }
}
