import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import Logging
import MobileDevice

/// The `DeviceDriver` for devices reached through usbmuxd (libimobiledevice): local USB, a remote
/// USB host's forwarded usbmuxd, or virtual devices.
public final class USBDriver: DeviceDriver, @unchecked Sendable {
    let udid: String
    let name: String
    let options: USBDeviceOptions
    let connectDeadline: Duration
    private let lock = NSLock()
    private var device: USBDevice?

    public init(
        udid: String, name: String, options: USBDeviceOptions, connectDeadline: Duration = .seconds(30)
    ) {
        self.udid = udid
        self.name = name
        // The image is the plan's mount step's (`prepare()`): no other step mounts it.
        var options = options
        options.mountsDeveloperImageOnDemand = false
        // A dropped upload is retried as the plan's install step says (after re-probing the device),
        // not once more underneath it.
        options.retriesInterruptedUpload = false
        self.options = options
        self.connectDeadline = connectDeadline
    }

    /// The device lookup ends a little before the connect step's own deadline, so that a device that
    /// is not there fails with what usbmuxd and mDNS saw and what to do ("not found on the network…
    /// wake it"), not with the step's bare "did not finish within 3 s": on a loaded machine the lookup's
    /// last round ran past a deadline equal to the step's, and the step's came first.
    static func lookupBudget(within step: Duration) -> Duration {
        let margin = min(max(step / 6, .milliseconds(500)), .seconds(2))
        return step > margin * 2 ? step - margin : step
    }

    func current() async throws -> USBDevice {
        if let device = lock.withLock({ device }) { return device }
        _ = try await connect()
        return lock.withLock { device! }
    }

    public func connect() async throws -> ConnectedDevice {
        let connected = try await USBTransport.connect(
            udid: udid, deadline: options.clock.deadline(after: Self.lookupBudget(within: connectDeadline)),
            options: options)
        lock.withLock { device = connected }
        let info = await connected.info
        // iOS 16+ runs no development build with Developer Mode off: said here, before the upload.
        if info.productVersion.major >= 16, info.developerModeEnabled == false {
            throw MobileDeviceError(
                .serviceUnavailable, step: "connect", device: info.identity,
                reason: "Developer Mode is off (amfi DeveloperModeStatus: false); iOS \(info.productVersion) "
                    + "mounts no developer image and opens no development build without it — nothing was sent",
                nextStep: USBDevice.developerModeStep)
        }
        return ConnectedDevice(
            udid: udid, name: info.identity.name ?? name, productType: info.productType,
            iosVersion: info.productVersion.description, arch: info.cpuArchitecture)
    }

    public func prepare() async throws {
        let device = try await current()
        // iOS 17+ cannot mount a legacy image through libimobiledevice 1.3.0; launch says so itself.
        guard await device.info.productVersion.major < 17 else { return }
        _ = try await device.mountDeveloperImageIfNeeded()
    }

    public func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        let device = try await current()
        let outcome = try await device.install(artifact: URL(fileURLWithPath: artifact.path), force: force) {
            update in
            progress(
                TransferProgress(
                    bytesDone: update.bytesDone, bytesTotal: update.bytesTotal, percent: update.percent,
                    phase: update.phase.rawValue))
        }
        return outcome == .skippedUnchanged ? .unchanged : .installed
    }

    /// Launches only: the image is the planned `mount` step's (`prepare()`), never mounted under the
    /// launch deadline. Without it, the device refuses debugserver and the launch says which step to run.
    public func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        let device = try await current()
        _ = try await device.launch(
            bundleID: artifact.bundleID, arguments: launch.arguments, restart: true,
            secrets: launch.secretValues)
    }

    public func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        let device = try await current()
        return try await device.crashReports(since: since, process: artifact.executable, copyTo: directory)
    }

    public func screenshot() async throws -> Data {
        try await current().screenshotPNG()
    }

    /// Through house_arrest (VendContainer): a development-signed build's container.
    public func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        let device = try await current()
        do {
            return try await device.appDataFile(bundleID: artifact.bundleID, path: relativePath)
        } catch let error as MobileDeviceError where error.kind == .appNotInstalled {
            throw AppDataUnavailable(error.reason)
        }
    }
}

extension MobileDeviceError: TransientClassifying {}

extension MobileDeviceError: HostLimitationClassifying {
    public var isHostLimitation: Bool { kind == .unsupportedOnThisIOS }
}

extension MobileDeviceError: PairingClassifying {
    public var isPairingLost: Bool { kind == .pairingInvalid && !isTransient }
}

extension MobileDeviceError: DeviceLockClassifying {
    public var isDeviceLocked: Bool { kind == .passcodeLocked }
}
