import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import SSHTestPeers
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One run, three usbmuxd addresses and Wi-Fi: a twin behind this machine's usbmuxd, a Wi-Fi-synced
/// one (found over multicast DNS, reached over TCP), and one plugged into each of two NASes reached
/// over SSH. Both routes are muxed into hadeploy's own usbmuxd, in one process (no worker):
/// one run, one report, one exit code, and one `status` that reads both.
@Suite("several USB hosts in one run", .serialized)
struct MultiHostDeployTests {
    @Test(
        "a device on this machine and one on each of two USB hosts over SSH deploy in one run with one report"
    )
    func twoUSBHostsOneRun() async throws {
        let peer = try await SSHPeer.start(.modern)
        defer { peer.stopAndClean() }
        let root = try TestEnvironment.makeDirectory("hd-multihost")
        defer { TestEnvironment.remove(root) }
        let home = root.appendingPathComponent("home")
        let project = root.appendingPathComponent("app")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".config/hadeploy"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        try await peer.writeKnownHosts(to: home.appendingPathComponent(".config/hadeploy/known_hosts").path)
        let key = home.appendingPathComponent("id_ed25519").path
        try FileManager.default.copyItem(atPath: TestEnvironment.ed25519Key, toPath: key)
        chmod(key, 0o600)

        // The NAS's usbmuxd socket must be reachable by the SSH login user, as /var/run/usbmuxd is.
        let nas = root.appendingPathComponent("nas")
        try FileManager.default.createDirectory(at: nas, withIntermediateDirectories: true)
        chmod(nas.path, 0o755)
        let nasSocket = nas.appendingPathComponent("usbmuxd")
        // A second USB host (another socket behind the same SSH server: another route all the same).
        let nas2 = root.appendingPathComponent("nas2")
        try FileManager.default.createDirectory(at: nas2, withIntermediateDirectories: true)
        chmod(nas2.path, 0o755)
        let nas2Socket = nas2.appendingPathComponent("usbmuxd")
        let localSocket = root.appendingPathComponent("local-usbmuxd.sock")
        let udids = [
            "mini4": "00008020-00115C2A0E38002E", "kitchen": "1234567890abcdef1234567890abcdef12345678",
            "hallway": "abcdef1234567890abcdef1234567890abcdef12", "den": "00008020-000D3A2B1C4E002E",
        ]
        // Developer Disk Images where Xcode keeps them (the twins mount any image).
        try DeveloperDiskImageFixture.write(in: root.appendingPathComponent("DeviceSupport/15.8"))
        try """
        version: 1
        defaults: {ddi_dir: \(root.appendingPathComponent("DeviceSupport").path)}
        flavours:
          modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
        devices:
          mini4: {name: iPad mini 4, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern,
                  transport: usb, udid: "${MINI4_UDID}"}
          den: {name: Den iPad, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern,
                transport: usb, network: true, udid: "${DEN_UDID}"}
          kitchen: {name: Kitchen iPad, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern,
                    transport: usb, udid: "${KITCHEN_UDID}",
                    usb_host: "ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)\(nasSocket.path)"}
          hallway: {name: Hallway iPad, product_type: "iPad5,1", ios: "15.8", arch: arm64, flavour: modern,
                    transport: usb, udid: "${HALLWAY_UDID}",
                    usb_host: "ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)\(nas2Socket.path)"}
        """.write(to: project.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        try
            "MINI4_UDID=\(udids["mini4"]!)\nKITCHEN_UDID=\(udids["kitchen"]!)\nHALLWAY_UDID=\(udids["hallway"]!)\nDEN_UDID=\(udids["den"]!)\n"
            .write(
                to: project.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        let builder = DemoAppBuilder()
        _ = try builder.build(
            flavour: Flavour(
                name: "modern", xcode: nil, archs: [.arm64], deploymentTarget: "15.0", sdk: "iphoneos",
                configuration: "Release", scheme: nil, settings: [:],
                location: SourceLocation(file: "devices.yaml", line: 1)),
            marketingVersion: "1.2.0", buildNumber: 2, into: project.appendingPathComponent("artifacts"),
            devices: Array(udids.values), now: Date(), in: TestHost.fileSystem)

        try ".env\nartifacts/\nreport/\n".write(
            to: project.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
        try await GitRepository.commitAll(at: project, tag: "v1.2.0")
        let local = try await VirtualTwinsProcess(
            project: project, only: ["mini4", "den"], socket: localSocket,
            state: root.appendingPathComponent("state-local"), home: home)
        defer { local.stop() }
        let remote = try await VirtualTwinsProcess(
            project: project, only: ["kitchen"], socket: nasSocket,
            state: root.appendingPathComponent("state-nas"), home: home)
        defer { remote.stop() }
        chmod(nasSocket.path, 0o666)
        let remote2 = try await VirtualTwinsProcess(
            project: project, only: ["hallway"], socket: nas2Socket,
            state: root.appendingPathComponent("state-nas2"), home: home)
        defer { remote2.stop() }
        chmod(nas2Socket.path, 0o666)

        let environment = [
            "USBMUXD_SOCKET_ADDRESS": local.address, "USB_HOST_SSH_KEY": key,
            "HADEPLOY_KNOWN_HOSTS": home.appendingPathComponent(".config/hadeploy/known_hosts").path,
            "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
        ]
        let plan = try await HADeployBinary.run(
            ["plan", "all", "--json", "--no-build", "--report", "report"], in: project,
            environment: environment)
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try #require(
            try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
        let devices = try #require(planned["devices"] as? [[String: Any]])
        let backends = devices.map { ($0["backend"] as? [String: Any])?["usbmuxd"] as? String }
        #expect(
            backends == [
                "local:\(local.address)", "local:\(local.address)",
                "ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)\(nasSocket.path)",
                "ssh://\(TestEnvironment.user)@127.0.0.1:\(peer.port)\(nas2Socket.path)",
            ])

        let result = try await HADeployBinary.run(
            ["all", "--no-build", "--artifacts", "artifacts", "--no-verify", "--report", "report", "--json"],
            in: project, environment: environment, timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try Data(contentsOf: project.appendingPathComponent("report/summary.json"))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let report = try decoder.decode(DeployReport.self, from: summary)
        #expect(report.results.map(\.id) == ["mini4", "den", "kitchen", "hallway"])
        #expect(
            report.results.map(\.outcome) == [.unverified, .unverified, .unverified, .unverified],
            "\(report.results.map(\.reason)) \(result.stderr)")
        #expect(report.results.allSatisfy { $0.install == .installed })
        // Every twin really has the app: each usbmuxd was reached at its own address.
        for (id, address) in [
            ("mini4", local.address), ("den", local.address), ("kitchen", "UNIX:" + nasSocket.path),
            ("hallway", "UNIX:" + nas2Socket.path),
        ] {
            let listed = try await TestHost.runner.checked(
                ProcessCommand(
                    "ideviceinstaller", ["-u", udids[id]!, "-l"] + (id == "den" ? ["-n"] : []),
                    environment: ["USBMUXD_SOCKET_ADDRESS": address]),
                timeout: .seconds(60))
            #expect(listed.stdout.contains("com.example.hadashboard"), "\(id): \(listed.stdout)")
        }
        // One process: no share of the plan was written for a worker, no message came from one.
        #expect(
            !FileManager.default.fileExists(atPath: project.appendingPathComponent(".hadeploy/workers").path))
        #expect(!result.stdout.contains("[ssh://") && !result.stderr.contains("[ssh://"), "\(result.stderr)")
        #expect(!result.stdout.contains("--worker") && !result.stderr.contains("--worker"))
        // The live view: one run, both devices' steps.
        let lines = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let finished = lines.filter { $0["event"] as? String == "device_finished" }.compactMap {
            $0["device"] as? String
        }
        #expect(Set(finished) == ["mini4", "den", "kitchen", "hallway"])
        let kitchenSteps = lines.filter {
            $0["event"] as? String == "step_started" && $0["device"] as? String == "kitchen"
        }
        .compactMap { $0["step"] as? String }
        #expect(kitchenSteps.first == "connect" && kitchenSteps.contains("install"))
        #expect(lines.filter { $0["event"] as? String == "run_finished" }.count == 1)

        // `status` reads both routes in one run too (before: the NAS's device was "reached through
        // another usbmuxd than this run's: run `hadeploy status` for it on its own").
        let status = try await HADeployBinary.run(
            ["status", "all", "--json", "--artifacts", "artifacts"], in: project, environment: environment,
            timeout: .seconds(120))
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let rows = try #require(object?["devices"] as? [[String: Any]], "\(status.stdout)\(status.stderr)")
        #expect(rows.compactMap { $0["id"] as? String } == ["mini4", "den", "kitchen", "hallway"])
        for row in rows {
            #expect(row["reachable"] as? Bool == true, "\(row)")
            let installed = (row["installed"] as? [String: Any])?["value"] as? [String: Any]
            #expect(installed?["marketingVersion"] as? String == "1.2.0", "\(row)")
            #expect(row["build"] as? String == "up to date", "\(row)")
        }

        // `hadeploy muxer` in the checkout: one socket with every route's devices, for any client.
        let muxSocket = root.appendingPathComponent("mux.sock")
        let muxer = try BackgroundCommand(
            try await HADeployBinary.path, ["muxer", "--socket", muxSocket.path], in: project,
            environment: environment.merging(["HOME": home.path]) { _, new in new })
        defer { muxer.stop() }
        #expect(
            try await muxer.line(startingWith: "USBMUXD_SOCKET_ADDRESS=", within: 60) != nil,
            "\(muxer.output)")
        let listed = try await TestHost.runner.checked(
            ProcessCommand(
                "idevice_id", ["-l"], environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + muxSocket.path]),
            timeout: .seconds(30))
        for id in ["mini4", "kitchen", "hallway"] {
            #expect(
                listed.stdout.contains(udids[id]!),
                "\(id) through the muxer: \(listed.stdout) \(muxer.output)")
        }
        for id in ["kitchen", "hallway"] {
            let apps = try await TestHost.runner.checked(
                ProcessCommand(
                    "ideviceinstaller", ["-u", udids[id]!, "-l"],
                    environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + muxSocket.path]),
                timeout: .seconds(60))
            #expect(
                apps.stdout.contains("com.example.hadashboard"), "\(id) through the muxer: \(apps.stdout)")
        }
    }
}
