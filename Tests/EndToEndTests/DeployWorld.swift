import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import Logging
import MobileDevice
import TestSupport
import VirtualDevice

/// One end-to-end scene: a git checkout of an app project with its devices.yaml and .env, virtual
/// devices behind a virtual usbmuxd (the real protocols, in this test process so faults can be
/// injected), demo app bundles per flavour, and a real Home Assistant. `deploy` runs the real
/// `hadeploy` binary against all of it.
final class DeployWorld: Sendable {
    struct Twin: Sendable {
        var id: String
        var productType: String
        var ios: String
        var arch: String
        var flavour: String
        var timeouts: String = ""
        /// More devices.yaml lines for this device (`ha_integration: true`).
        var extra: [String] = []
        /// `loaded_event: true` (an app build that fires ha_dashboard_loaded is expected).
        var loadedEvent = true
        /// The iOS device name (lockdown DeviceName, the app's mobile_app name); nil = the preset's.
        var deviceName: String?
        /// A Wi-Fi-synced device: a network twin, `network: true` in devices.yaml.
        var network = false
        /// With `network`: plugged in by USB as well (a USB entry too), as when it is paired.
        var usbToo = false
        /// devices.yaml's transport (`devicectl`: an iOS 17+ device, pymobiledevice3 on Linux).
        var transport = "usb"
    }

    let root: URL
    let usbmuxd: VirtualUsbmuxd
    let socket: String
    let udids: [String: String]
    let ha: HomeAssistantServer

    static let defaultTwins = [
        Twin(id: "ipad2", productType: "iPad2,1", ios: "9.3.5", arch: "armv7", flavour: "legacy"),
        Twin(id: "mini4", productType: "iPad5,1", ios: "15.8", arch: "arm64", flavour: "modern"),
        Twin(id: "kitchen", productType: "iPad5,1", ios: "15.8", arch: "arm64", flavour: "modern"),
    ]

    /// `wifiOnly`: the network twins are listed by no usbmuxd (the world's lists USB twins only, as
    /// Linux's does) and announce themselves over multicast DNS, as Wi-Fi-synced devices do.
    /// `announces: false` (with `wifiOnly`): a network that passes no multicast DNS.
    init(
        twins: [Twin] = DeployWorld.defaultTwins, ha: HomeAssistantServer? = nil, wifiOnly: Bool = false,
        announces: Bool = true
    ) async throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-e2e-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if let ha {
            self.ha = ha
        } else {
            self.ha = try await HomeAssistantServer.shared()
        }

        var profiles: [VirtualDeviceProfile] = []
        for twin in twins {
            var profile = try requireValue(
                VirtualDeviceProfile.preset(productType: twin.productType, iOSVersion: twin.ios))
            profile.name = twin.id
            if let name = twin.deviceName { profile.deviceName = name }
            if twin.network { profile.connection = twin.usbToo ? .usbAndNetwork : .network }
            profiles.append(profile)
        }
        var logger = Logger(label: "e2e.virtual")
        logger.logLevel = .critical
        usbmuxd = try VirtualUsbmuxd(
            profiles: profiles, stateDirectory: root.appendingPathComponent("virtual"),
            address: .unixSocket(root.appendingPathComponent("usbmuxd.sock").path), logger: logger,
            fileSystem: TestHost.fileSystem, wifiOnly: wifiOnly, announces: announces)
        socket = try await usbmuxd.start()
        await usbmuxd.setRebootDuration(.milliseconds(500))
        var udids: [String: String] = [:]
        for info in await usbmuxd.devices() { udids[info.name] = info.udid }
        self.udids = udids

        // Developer Disk Images where a real Xcode would keep them (virtual devices mount any image).
        for version in ["9.3", "15.8"] {
            try DeveloperDiskImageFixture.write(in: root.appendingPathComponent("DeviceSupport/\(version)"))
        }

        var yaml = """
            version: 1
            defaults:
              verification_timeout: 20
              ddi_dir: \(root.appendingPathComponent("DeviceSupport").path)
            flavours:
              legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}
              modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
            devices:

            """
        var env = "HA_SERVER=\(self.ha.url)\nHA_TOKEN=\(self.ha.token)\n"
        for twin in twins {
            let key = twin.id.uppercased() + "_UDID"
            yaml += """
                  \(twin.id):
                    product_type: \(twin.productType)
                    ios: "\(twin.ios)"
                    arch: \(twin.arch)
                    flavour: \(twin.flavour)
                    transport: \(twin.transport)
                    network: \(twin.network)
                    udid: ${\(key)}
                    loaded_event: \(twin.loadedEvent)
                \(twin.timeouts.isEmpty ? "" : "    timeouts: \(twin.timeouts)\n")\(twin.extra.map { "    \($0)\n" }.joined())
                """
            env += "\(key)=\(udids[twin.id] ?? "")\n"
        }
        try yaml.write(to: root.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        try env.write(to: root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)

        let builder = DemoAppBuilder()
        for (name, archs) in [("legacy", [Arch.armv7, .arm64]), ("modern", [.arm64])] {
            let flavour = Flavour(
                name: name, xcode: nil, archs: archs, deploymentTarget: "9.0", sdk: "iphoneos",
                configuration: "Release",
                scheme: nil, settings: [:], location: SourceLocation(file: "devices.yaml", line: 1))
            _ = try builder.build(
                flavour: flavour, marketingVersion: "1.2.0", buildNumber: 2,
                into: root.appendingPathComponent("artifacts"), devices: Array(udids.values), now: Date(),
                in: TestHost.fileSystem)
        }

        try ".env\nartifacts/\nvirtual/\nreport*/\nusbmuxd.sock\n*.sock\nDeviceSupport/\n".write(
            to: root.appendingPathComponent(".gitignore"), atomically: true, encoding: .utf8)
        try await GitRepository.commitAll(at: root, tag: "v1.2.0")
    }

    /// The `modern` flavour as the world's devices.yaml has it (for building other demo versions).
    static var modernFlavour: Flavour {
        Flavour(
            name: "modern", xcode: nil, archs: [.arm64], deploymentTarget: "15.0", sdk: "iphoneos",
            configuration: "Release", scheme: nil, settings: [:],
            location: SourceLocation(file: "devices.yaml", line: 1))
    }

    /// Adds a device to devices.yaml (`devices:` is its last section) with these lines under its id.
    func addDevice(id: String, lines: [String]) throws {
        let file = root.appendingPathComponent("devices.yaml")
        let yaml = try String(contentsOf: file, encoding: .utf8)
        let entry = "  \(id):\n" + lines.map { "    \($0)\n" }.joined()
        try (yaml + (yaml.hasSuffix("\n") ? "" : "\n") + entry).write(
            to: file, atomically: true, encoding: .utf8)
    }

    /// Runs `hadeploy <arguments>` in the checkout against the virtual devices.
    func deploy(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(180))
        async throws -> HADeployBinary.Result
    {
        try await HADeployBinary.run(
            arguments, in: root, environment: variables(environment), timeout: timeout)
    }

    /// hadeploy as a service in this world (`status --every`), read while it runs.
    func service(_ arguments: [String], environment: [String: String] = [:]) async throws -> BackgroundCommand
    {
        try BackgroundCommand(
            try await HADeployBinary.path, arguments, in: root, environment: variables(environment))
    }

    /// The environment hadeploy runs with here, `environment` over it.
    func variables(_ environment: [String: String]) -> [String: String] {
        var variables = [
            "USBMUXD_SOCKET_ADDRESS": socket, "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
            // hadeploy's own pair records (`hadeploy pair`), this world's and no one else's.
            "HADEPLOY_PAIR_RECORDS": root.appendingPathComponent("pair-records").path,
        ]
        variables.merge(environment) { _, new in new }
        return variables
    }

    /// Waits until the app's upload to `device` has begun: a file of it open in the twin's
    /// PublicStaging (the Developer disk image's `staging.dimage` aside). False after `deadline` s.
    func uploadStarted(_ device: String, deadline: Duration = .seconds(60)) async throws -> Bool {
        let staging = root.appendingPathComponent("virtual/devices/\(device)/Media/PublicStaging")
        let end = ContinuousClock.now + deadline
        repeat {
            let files =
                FileManager.default.enumerator(at: staging, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL } ?? []
            if files.contains(where: { !$0.hasDirectoryPath && $0.lastPathComponent != "staging.dimage" }) {
                return true
            }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < end
        return false
    }

    /// Waits until `device` is attached again after a reboot (usbmuxd gave it a DeviceID). False
    /// after `deadline`.
    func attached(_ device: String, deadline: Duration = .seconds(20)) async throws -> Bool {
        let end = ContinuousClock.now + deadline
        repeat {
            if await usbmuxd.devices().contains(where: { $0.name == device && $0.deviceID != nil }) {
                return true
            }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < end
        return false
    }

    func report(_ name: String = "report") throws -> DeployReport {
        let data = try Data(contentsOf: root.appendingPathComponent("\(name)/summary.json"))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(DeployReport.self, from: data)
    }

    func shutdown() async {
        await usbmuxd.stop()
        try? FileManager.default.removeItem(at: root)
    }
}

/// `#require` for a plain optional outside a test body.
func requireValue<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else {
        throw CocoaError(.coderValueNotFound, userInfo: [NSDebugDescriptionErrorKey: what])
    }
    return value
}

extension DeployWorld {
    /// Sends this test process's own libimobiledevice calls to the world's twins, through the
    /// process's usbmuxd relay (in a folder of the E2E worlds, not a shared one).
    func routeThisProcess() throws {
        let relay = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-e2e-relay-\(getpid())")
        try FileManager.default.createDirectory(
            at: relay, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try USBTransport.route(to: socket, folders: [relay.path])
    }
}
