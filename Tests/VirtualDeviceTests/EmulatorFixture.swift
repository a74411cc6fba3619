import Foundation
import Logging
import NIOConcurrencyHelpers
import TestSupport
import VirtualDevice

/// Temporary directories to delete when the test process exits: `defer { Task { … } }` cleanups of
/// the last tests may not run before the process ends.
private let leftoverDirectories: NIOLockedValueBox<Set<String>> = {
    atexit {
        for path in leftoverDirectories.withLockedValue({ $0 }) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
    return NIOLockedValueBox([])
}()

/// A running virtual usbmuxd in a fresh temporary directory.
struct EmulatorFixture {
    let directory: URL
    let daemon: VirtualUsbmuxd
    /// USBMUXD_SOCKET_ADDRESS for the tools.
    let socket: String

    static func makeDirectory() throws -> URL {
        // Short path: UNIX socket paths are limited to 108 bytes.
        let directory = URL(fileURLWithPath: "/tmp/vdt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = leftoverDirectories.withLockedValue { $0.insert(directory.path) }
        return directory
    }

    static var logger: Logger {
        // Set VDEV_TEST_LOG=1 to see the emulator's log.
        if ProcessInfo.processInfo.environment["VDEV_TEST_LOG"] != nil {
            var logger = Logger(label: "vdev-test")
            logger.logLevel =
                ProcessInfo.processInfo.environment["VDEV_TEST_LOG"] == "trace" ? .trace : .debug
            return logger
        }
        return Logger(label: "vdev-test", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    static func start(
        _ profiles: [VirtualDeviceProfile], directory: URL? = nil, tcp: Bool = false,
        behaviour: (any VirtualAppBehaviour)? = nil
    ) async throws -> EmulatorFixture {
        let directory = try directory ?? makeDirectory()
        let address: VirtualUsbmuxdAddress =
            tcp ? .tcp(port: 0) : .unixSocket(directory.appendingPathComponent("usbmuxd.sock").path)
        let daemon: VirtualUsbmuxd
        if let behaviour {
            daemon = try VirtualUsbmuxd(
                profiles: profiles, stateDirectory: directory, address: address, logger: logger,
                appBehaviour: behaviour, fileSystem: TestHost.fileSystem)
        } else {
            daemon = try VirtualUsbmuxd(
                profiles: profiles, stateDirectory: directory, address: address, logger: logger,
                fileSystem: TestHost.fileSystem)
        }
        let socket = try await daemon.start()
        return EmulatorFixture(directory: directory, daemon: daemon, socket: socket)
    }

    func stop(removeState: Bool = true) async {
        await daemon.stop()
        if removeState { try? FileManager.default.removeItem(at: directory) }
    }

    func run(_ tool: String, _ arguments: [String], timeout: Double = 20) async throws -> ToolResult {
        try await ToolRunner.run(tool, arguments, socket: socket, timeout: timeout)
    }

    func udid(_ name: String) async -> String {
        await daemon.devices().first { $0.name == name }!.udid
    }
}

enum Profiles {
    static func named(_ name: String, _ productType: String, _ version: String? = nil) -> VirtualDeviceProfile
    {
        var profile = VirtualDeviceProfile.preset(productType: productType, iOSVersion: version)!
        profile.name = name
        return profile
    }

    static var ipad2: VirtualDeviceProfile { named("ipad2", "iPad2,1") }
    static var ipadMini4: VirtualDeviceProfile { named("mini4", "iPad5,1") }
    static var ipadMini5: VirtualDeviceProfile { named("mini5", "iPad11,1") }
    static var iphone16: VirtualDeviceProfile { named("iphone16", "iPhone17,2", "18.x") }
}
