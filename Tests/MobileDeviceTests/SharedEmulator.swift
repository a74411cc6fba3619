import Foundation
import HADeployCore
import Logging
import MobileDevice
import TestSupport
import VirtualDevice

/// One virtual usbmuxd for the whole test process, with one virtual device per test area so tests
/// can run in parallel without touching each other's device. libusbmuxd reads
/// USBMUXD_SOCKET_ADDRESS process-wide, hence one daemon rather than one per test.
actor SharedEmulator {
    static let shared = SharedEmulator()

    struct Context: Sendable {
        let daemon: VirtualUsbmuxd
        let socket: String
        let directory: URL
        /// A DeviceSupport-style folder with images for 9.3 and 15.8.
        let developerImages: URL

        func udid(_ name: String) async -> String {
            await daemon.devices().first { $0.name == name }!.udid
        }

        /// PublicStaging on the virtual device's disk (what AFC uploads land in).
        func staging(_ name: String) -> URL {
            directory.appendingPathComponent("devices/\(name)/Media/PublicStaging")
        }

        func options(
            images: Bool = true, timeouts: USBTimeouts = USBTimeouts(),
            logger: Logger = SharedEmulator.quietLogger
        ) -> USBDeviceOptions {
            USBDeviceOptions(
                stateDirectory: directory.appendingPathComponent("hadeploy-state"),
                developerImageDirectories: images ? [developerImages] : [], timeouts: timeouts,
                logger: logger,
                launchSettle: .milliseconds(800))
        }

        func connect(_ name: String, options: USBDeviceOptions? = nil) async throws -> USBDevice {
            try await USBTransport.connect(
                udid: await udid(name), deadline: .now + .seconds(30), options: options ?? self.options())
        }
    }

    private var starting: Task<Context, any Error>?

    static var quietLogger: Logger {
        if ProcessInfo.processInfo.environment["USB_TEST_LOG"] != nil {
            var logger = Logger(label: "usb-test")
            logger.logLevel = .debug
            return logger
        }
        return Logger(label: "usb-test", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// Device names, one per test area (suites that share a device run serialized). Few devices:
    /// each costs RSA key generation at start.
    enum Device {
        static let install = "usb-install"
        static let faults = "usb-faults"
        static let trust = "usb-trust"
        static let developer = "usb-dev"
        static let ipad2 = "usb-ipad2"
        static let iphone18 = "usb-iphone18"
        /// house_arrest tests: its own twin, so installs there never race other suites' staging checks.
        static let container = "usb-container"
        /// A Wi-Fi-synced iPad mini 4: usbmuxd lists it as a Network device only.
        static let wifi = "usb-wifi"
        /// Another Wi-Fi-synced iPad, for the identity proofs (NetworkDeviceTests takes `wifi` off the
        /// network and throttles it).
        static let wifiIdentity = "usb-wifi-identity"
    }

    /// Starts the emulator once; concurrent callers wait for the same start.
    func context() async throws -> Context {
        if let starting { return try await starting.value }
        let task = Task { try await Self.start() }
        starting = task
        return try await task.value
    }

    private static func start() async throws -> Context {
        let directory = URL(fileURLWithPath: "/tmp/mdt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func profile(_ name: String, _ type: String, _ version: String? = nil) -> VirtualDeviceProfile {
            var profile = VirtualDeviceProfile.preset(productType: type, iOSVersion: version)!
            profile.name = name
            return profile
        }
        var trust = profile(Device.trust, "iPad5,1")
        trust.pairing = .hostPairs
        trust.faults = [.pairingDialogPending]
        var ipad2 = profile(Device.ipad2, "iPad2,1")
        ipad2.screenshotFormat = .tiff  // exercises the TIFF → PNG path
        var wifi = profile(Device.wifi, "iPad5,1")
        wifi.connection = .network
        var wifiIdentity = profile(Device.wifiIdentity, "iPad5,1")
        wifiIdentity.connection = .network
        let profiles = [
            profile(Device.install, "iPad5,1"), profile(Device.faults, "iPad5,1"), trust,
            profile(Device.developer, "iPad5,1"), ipad2, profile(Device.iphone18, "iPhone17,2", "18.x"),
            profile(Device.container, "iPad5,1"), wifi, wifiIdentity,
        ]
        let daemon = try VirtualUsbmuxd(
            profiles: profiles, stateDirectory: directory,
            address: .unixSocket(directory.appendingPathComponent("usbmuxd.sock").path),
            logger: Self.quietLogger, appBehaviour: EchoBehaviour(), fileSystem: TestHost.fileSystem)
        await daemon.setRebootDuration(.seconds(1))
        let socket = try await daemon.start()
        try USBTransport.route(to: socket, folders: [NSTemporaryDirectory()])
        let images = directory.appendingPathComponent("DeviceSupport")
        for folder in ["15.8", "9.3 (13G36)"] {
            try DeveloperDiskImageFixture.write(
                in: images.appendingPathComponent(folder), image: Data(repeating: 0x5A, count: 300_000),
                signature: Data(repeating: 0xA5, count: 128))
        }
        return Context(daemon: daemon, socket: socket, directory: directory, developerImages: images)
    }
}

/// A launched app that prints its arguments and environment, and shows them on screen.
struct EchoBehaviour: VirtualAppBehaviour {
    func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {
        context.print("started with \(launch.arguments.joined(separator: " "))")
        context.show(VirtualScreen(title: launch.displayName, lines: launch.arguments + launch.environment))
        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(100)) }
    }
}

/// Runs a Debian libimobiledevice tool against the shared emulator, with a deadline.
enum DebianTool {
    struct Result {
        let status: Int32
        let output: String
    }

    struct Missing: Error, CustomStringConvertible {
        let path: String
        var description: String { "\(path) is missing: install libimobiledevice-utils and ideviceinstaller" }
    }

    static func run(_ tool: String, _ arguments: [String], socket: String, timeout: Double = 30) async throws
        -> Result
    {
        let path = "/usr/bin/\(tool)"
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Missing(path: path) }
        // One stream, as a terminal shows it: stdout, then stderr.
        do {
            let output = try await TestHost.runner.run(
                ProcessCommand(path, arguments, environment: ["USBMUXD_SOCKET_ADDRESS": socket]),
                timeout: .seconds(timeout))
            return Result(status: output.status, output: output.stdout + output.stderr)
        } catch let error as ProcessError {
            return Result(status: -1, output: error.description)
        }
    }
}
