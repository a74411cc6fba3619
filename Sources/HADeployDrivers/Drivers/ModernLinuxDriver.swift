import DeployModel
import Foundation
import HADeployCore

/// An iOS 17+ device on Linux: install, crash reports and the app's files over usbmuxd (lockdown),
/// the image mount, launch and screenshots through pymobiledevice3's developer tunnel (its own
/// userspace tunnel: no root, no tunneld) when it is installed.
/// Without them the device ends "installed only", with exactly what is missing.
public final class ModernLinuxDriver: DeviceDriver, @unchecked Sendable {
    let usb: any DeviceDriver
    let tunnel: PyMobileDevice3Driver

    public init(usb: any DeviceDriver, tunnel: PyMobileDevice3Driver) {
        self.usb = usb
        self.tunnel = tunnel
    }

    public func connect() async throws -> ConnectedDevice {
        // pymobiledevice3's helper starts meanwhile: its imports take about a second.
        await tunnel.warmUp()
        return try await usb.connect()
    }

    /// The planned mount step: the personalized Developer Disk Image, looked up and mounted when it is
    /// not (pymobiledevice3). Without pymobiledevice3 nothing is mounted: launch says what is missing.
    public func prepare() async throws {
        guard (try? await tunnel.version()) ?? nil != nil else { return }
        try await tunnel.prepare()
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        try await usb.install(artifact, force: force, progress: progress)
    }

    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        if let missing = await tunnel.readiness().launch { throw TunnelMissing(detail: missing) }
        try await tunnel.launch(artifact, settings: launch)
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        try await usb.crashReports(of: artifact, since: since, into: directory)
    }

    /// house_arrest is a lockdown service: libimobiledevice reaches it on iOS 17+ too.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try await usb.appDataFile(artifact, relativePath: relativePath)
    }

    /// Lockdown answers battery, storage and the installed build over usbmuxd on iOS 17+ too.
    public func facts(_ query: StatusQuery) async -> DeviceFacts { await usb.facts(query) }

    public func screenshot() async throws -> Data {
        if let missing = await tunnel.readiness().screenshot { throw TunnelMissing(detail: missing) }
        return try await tunnel.screenshot()
    }

    /// pymobiledevice3's helper notes a rebuilt tunnel, or the slower path it had to leave the steps to.
    public func takeStepNote() async -> String? { await tunnel.takeStepNote() }

    /// Stops pymobiledevice3's helper for this device.
    public func close() async { await tunnel.close() }
}

/// What the iOS 17+ developer tunnel lacks on this host.
struct TunnelMissing: Error, CustomStringConvertible, HostLimitationClassifying {
    var detail: String
    var description: String { detail }
    var isHostLimitation: Bool { true }
}
