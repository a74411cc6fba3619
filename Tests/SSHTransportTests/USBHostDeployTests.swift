import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import SSHTestPeers
import TestSupport
import Testing

@testable import HADeployBuild
@testable import SSHTransport

/// A USB device plugged into another machine: the real `hadeploy` forwards that machine's usbmuxd
/// over SSH (a real sshd on loopback in front of a virtual usbmuxd) and installs through the tunnel;
/// a device the matrix does not name stays invisible.
@Suite("hadeploy through a USB host's usbmuxd forwarded over SSH")
struct USBHostDeployTests {
    @Test("installs on the matrix's device behind the USB host, never on the other one")
    func deployThroughTunnel() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let root = try TestEnvironment.makeDirectory("hd-usbhost")
        defer { TestEnvironment.remove(root) }
        // The USB host: its twins in `hadeploy virtual` (a process of its own, as a usbmuxd is), one
        // the matrix names and one it does not.
        let udid = "00008020-00115C2A0E38002E"
        let hidden = "00008020-000A1B2C3D4E802E"
        let host = root.appendingPathComponent("usb-host")
        try FileManager.default.createDirectory(at: host, withIntermediateDirectories: true)
        try """
        version: 1
        flavours:
          modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
        devices:
          mini4: {product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb,
                  udid: "\(udid)"}
          other: {product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern, transport: usb,
                  udid: "\(hidden)"}
        """.write(to: host.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        let socket = root.appendingPathComponent("mux.sock")
        let socketPath = socket.path
        let twins = try await VirtualTwinsProcess(
            project: host, only: ["mini4", "other"], socket: socket,
            state: host.appendingPathComponent("state"), home: host)
        defer { twins.stop() }
        chmod(socketPath, 0o666)

        // The user's SSH setup: a key in ~/.ssh and the host trusted in hadeploy's known_hosts.
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".config/hadeploy"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".ssh"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: TestEnvironment.ed25519Key, toPath: home.appendingPathComponent(".ssh/id_ed25519").path)
        chmod(home.appendingPathComponent(".ssh/id_ed25519").path, 0o600)
        try await peer.writeKnownHosts(to: home.appendingPathComponent(".config/hadeploy/known_hosts").path)

        let project = root.appendingPathComponent("app")
        try DeveloperDiskImageFixture.write(in: project.appendingPathComponent("DeviceSupport/15.8"))
        let yaml = """
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
            devices:
              mini4:
                product_type: iPad5,1
                ios: "15.8"
                arch: arm64
                flavour: modern
                transport: usb
                udid: \(udid)
                usb_host: ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)\(socketPath)
                ddi_dir: \(project.appendingPathComponent("DeviceSupport").path)
            """
        try yaml.write(to: project.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        try "HA_SERVER=http://127.0.0.1:9\nHA_TOKEN=unused\n".write(
            to: project.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        let flavour = Flavour(
            name: "modern", xcode: nil, archs: [.arm64], deploymentTarget: "15.0", sdk: "iphoneos",
            configuration: "Release", scheme: nil, settings: [:],
            location: SourceLocation(file: "devices.yaml", line: 1))
        _ = try DemoAppBuilder().build(
            flavour: flavour, marketingVersion: "1.0", buildNumber: 1,
            into: project.appendingPathComponent("artifacts"), devices: [udid], now: Date(),
            in: TestHost.fileSystem)
        _ = try await TestHost.runner.checked(
            ProcessCommand(
                "/bin/sh",
                ["-c", "git init -q && git -c user.name=t -c user.email=t@x commit -q --allow-empty -m app"],
                workingDirectory: project.path),
            timeout: .seconds(30))

        let result = try await HADeployBinary.run(
            ["mini4", "--no-build", "--artifacts", "artifacts", "--no-verify"], in: project,
            environment: ["HOME": home.path], timeout: .seconds(180))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("forwarding its usbmuxd over SSH"))
        // What each twin has, asked the way a user would, on the USB host's own usbmuxd.
        for (device, expected) in [(udid, true), (hidden, false)] {
            let listed = try await TestEnvironment.run(
                "/usr/bin/ideviceinstaller", ["-u", device, "-l"],
                environment: ["USBMUXD_SOCKET_ADDRESS": twins.address], timeout: 60)
            #expect(listed.status == 0, "\(listed.output)")
            #expect(
                listed.output.contains("com.example.hadashboard") == expected, "\(device): \(listed.output)")
        }

        // `hadeploy devices` lists it through the tunnel too, and never the device the matrix leaves out.
        let listed = try await HADeployBinary.run(
            ["devices", "--json"], in: project, environment: ["HOME": home.path], timeout: .seconds(120))
        #expect(listed.status == 0, "\(listed.stderr)")
        let inventory = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
        let rows = try #require(inventory["rows"] as? [[String: Any]])
        let row = try #require(rows.first { $0["id"] as? String == "mini4" })
        #expect(row["connected"] as? Bool == true)
        #expect(!listed.stdout.contains(hidden))
    }
}
