import Foundation
import HADeployCore
import Logging
import TestSupport
import VirtualDevice
import ZIPFoundation

/// One virtual device behind a virtual usbmuxd, as `hadeploy virtual --only NAME` runs it, with the
/// two clients pointed at it: pymobiledevice3 from `.venv-pmd3` and the Debian tools from /usr/bin.
struct FidelityTwin {
    let directory: URL
    let daemon: VirtualUsbmuxd
    /// libusbmuxd's form, `UNIX:/path`.
    let socket: String
    let udid: String
    let profile: VirtualDeviceProfile

    static var repositoryRoot: URL { TestSupport.repositoryRoot }

    /// The pinned pymobiledevice3 in `.venv-pmd3`.
    static var pymobiledevice3: String {
        repositoryRoot.appendingPathComponent(".venv-pmd3/bin/pymobiledevice3").path
    }

    struct MissingClient: Error, CustomStringConvertible {
        let detail: String
        var description: String { detail }
    }

    /// Creates `.venv-pmd3` when missing (scripts/pmd3-venv.sh: idempotent, pinned, one process at a
    /// time); the Debian tools come from `make peers`. Either missing fails the test.
    static func provisionClients() throws {
        // Its output goes where the test's goes.
        let script = try ChildProcess(
            executable: repositoryRoot.appendingPathComponent("scripts/pmd3-venv.sh").path, arguments: [],
            standardOutput: .descriptor(1), standardError: .descriptor(2))
        while script.isRunning { usleep(10_000) }
        guard script.exitCode == 0, FileManager.default.isExecutableFile(atPath: pymobiledevice3)
        else {
            throw MissingClient(detail: "scripts/pmd3-venv.sh could not create \(pymobiledevice3)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ideviceinfo") else {
            throw MissingClient(
                detail: "the Debian libimobiledevice tools are missing: run scripts/idevice-tools.sh")
        }
    }

    static func start(_ profile: VirtualDeviceProfile, behaviour: any VirtualAppBehaviour) async throws
        -> FidelityTwin
    {
        try provisionClients()
        // Short path: UNIX socket paths are limited to 108 bytes.
        let directory = URL(fileURLWithPath: "/tmp/pmd3-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let daemon = try VirtualUsbmuxd(
            profiles: [profile], stateDirectory: directory,
            address: .unixSocket(directory.appendingPathComponent("usbmuxd.sock").path),
            logger: Logger(label: "pmd3-fidelity", factory: { _ in SwiftLogNoOpLogHandler() }),
            appBehaviour: behaviour, fileSystem: TestHost.fileSystem)
        let socket = try await daemon.start()
        let udid = await daemon.devices().first!.udid
        return FidelityTwin(
            directory: directory, daemon: daemon, socket: socket, udid: udid, profile: profile)
    }

    func stop() async {
        await daemon.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts `pymobiledevice3 ARGS --udid UDID`. pymobiledevice3 reads USBMUXD_SOCKET_ADDRESS too,
    /// but as a bare path or HOST:PORT: the `UNIX:` prefix libusbmuxd uses would be taken for a host.
    /// Commands without a `--udid` option (`remote rsd-info`) name the device in
    /// PYMOBILEDEVICE3_UDID instead (`udidOption: false`).
    func startPMD3(_ arguments: [String], udidOption: Bool = true) throws -> ClientProcess {
        let path = socket.hasPrefix("UNIX:") ? String(socket.dropFirst(5)) : socket
        return try ClientProcess(
            Self.pymobiledevice3, arguments + (udidOption ? ["--udid", udid] : []),
            environment: [
                "USBMUXD_SOCKET_ADDRESS": path, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200",
                "PYMOBILEDEVICE3_UDID": udid,
            ],
            directory: directory)
    }

    func pmd3(_ arguments: [String], udidOption: Bool = true, deadline: Double = 60) async throws
        -> ClientProcess.Result
    {
        try await startPMD3(arguments, udidOption: udidOption).finish(deadline: deadline)
    }

    /// Starts a Debian libimobiledevice tool (`/usr/bin/TOOL -u UDID ARGS`).
    func startDebian(_ tool: String, _ arguments: [String]) throws -> ClientProcess {
        try ClientProcess(
            "/usr/bin/\(tool)", ["-u", udid] + arguments, environment: ["USBMUXD_SOCKET_ADDRESS": socket],
            directory: directory)
    }

    func debian(_ tool: String, _ arguments: [String], deadline: Double = 60) async throws
        -> ClientProcess.Result
    {
        try await startDebian(tool, arguments).finish(deadline: deadline)
    }

    /// Polls `condition` every 50 ms until it holds (true) or `deadline` seconds pass (false): for
    /// a positive signal from the twin instead of a fixed wait.
    func waitUntil(deadline: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(deadline)
        while Date() < end {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// A Developer disk image pair: the twin checks that an image and a signature arrive, not Apple's
    /// signature (which only a real device can).
    func developerImage() throws -> (image: URL, signature: URL) {
        let image = directory.appendingPathComponent("DeveloperDiskImage.dmg")
        let signature = directory.appendingPathComponent("DeveloperDiskImage.dmg.signature")
        try Data(repeating: 0x44, count: 2 * 1024 * 1024).write(to: image)
        try Data((0..<128).map { UInt8($0) }).write(to: signature)
        return (image, signature)
    }

    /// An .ipa of an app whose executable is only a Mach-O header for the twin's architecture
    /// (SYNTHETIC: no code), padded with `payloadBytes` of incompressible data.
    func makeIPA(bundleID: String, name: String = "Dashboard", payloadBytes: Int = 100_000) throws -> URL {
        let root = directory.appendingPathComponent("ipa-\(UUID().uuidString.prefix(8))")
        let app = root.appendingPathComponent("Payload/\(name).app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let info: [String: Any] = [
            "CFBundleIdentifier": bundleID, "CFBundleExecutable": name, "CFBundleVersion": "42",
            "CFBundleShortVersionString": "1.2.3", "CFBundleDisplayName": "HA \(name)", "CFBundleName": name,
            "MinimumOSVersion": "9.0", "UIDeviceFamily": [1, 2],
            // Documents shared with the host, so house_arrest's VendDocuments may vend them.
            "UIFileSharingEnabled": true,
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: app.appendingPathComponent("Info.plist"))
        try Self.machOHeader(arm64: profile.cpuArchitecture != "armv7").write(
            to: app.appendingPathComponent(name))
        var generator = SystemRandomNumberGenerator()
        try Data((0..<payloadBytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
            .write(to: app.appendingPathComponent("Assets.bin"))
        try TestProfiles.embed(in: app)
        let ipa = directory.appendingPathComponent("\(name).ipa")
        try? FileManager.default.removeItem(at: ipa)
        try FileManager.default.zipItem(
            at: root.appendingPathComponent("Payload"), to: ipa, shouldKeepParent: true,
            compressionMethod: .none)
        try FileManager.default.removeItem(at: root)
        return ipa
    }

    /// A thin little-endian Mach-O header (MH_EXECUTE) for armv7 or arm64 with a code signature load
    /// command (installd takes no unsigned executable), padded to 4 KiB.
    static func machOHeader(arm64: Bool) -> Data {
        var data = Data()
        func le(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        le(arm64 ? 0xFEED_FACF : 0xFEED_FACE)
        le(arm64 ? 0x0100_000C : 12)
        le(arm64 ? 0 : 9)
        le(2)
        le(1)  // ncmds
        le(16)  // sizeofcmds
        le(0)
        if arm64 { le(0) }
        for word: UInt32 in [0x1D, 16, 4032, 0] { le(word) }  // LC_CODE_SIGNATURE, empty blob
        data.append(Data(count: 4096 - data.count))
        return data
    }
}
