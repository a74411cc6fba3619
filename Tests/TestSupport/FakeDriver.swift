import DeployModel
import Foundation

/// A `DeviceDriver` double for tests of the pure middle (a fake: no transport stands behind it).
/// Fail by default: every call throws ``Unexpected`` unless a subclass answers it, or the fake
/// was made to forward to a real driver (`forwardingTo:`), when that driver answers.
open class FakeDriver: DeviceDriver, @unchecked Sendable {
    /// A call the test did not expect.
    public struct Unexpected: Error, CustomStringConvertible {
        public var call: String
        public init(_ call: String) { self.call = call }
        public var description: String { "unexpected call: \(call)" }
    }

    private let real: (any DeviceDriver)?

    public init(forwardingTo real: (any DeviceDriver)? = nil) {
        self.real = real
    }

    private func forwarded(_ call: String) throws -> any DeviceDriver {
        guard let real else { throw Unexpected(call) }
        return real
    }

    open func connect() async throws -> ConnectedDevice {
        try await forwarded("connect").connect()
    }
    open func prepare() async throws {
        try await forwarded("prepare").prepare()
    }
    open func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        try await forwarded("install").install(artifact, force: force, progress: progress)
    }
    open func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        try await forwarded("launch").launch(artifact, settings: launch)
    }
    open func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws -> [URL] {
        try await forwarded("crashReports").crashReports(of: artifact, since: since, into: directory)
    }
    open func screenshot() async throws -> Data {
        try await forwarded("screenshot").screenshot()
    }
    open func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        try await forwarded("appDataFile").appDataFile(artifact, relativePath: relativePath)
    }
}

/// A driver that plays a device for the executor's tests (parallelism, deadlines, retries, locks,
/// reports): it connects (after `connectFailures` transient failures), installs (after
/// `installDelay`, or fails with `installError`), records each launch's arguments and hands out
/// `crashes` as crash reports.
public final class ScriptedDriver: FakeDriver, @unchecked Sendable {
    public var connectFailures: Int
    public var installDelay: Duration
    public var installError: (any Error)?
    public var crashes: [URL]
    /// What the launch throws, if anything.
    public var launchError: (any Error)?
    public let lock = NSLock()
    public var launched: [[String]] = []
    public var connects = 0
    public var installs = 0
    /// The UDID the device reports when it connects (devicectl: the hardware UDID).
    public var reportedUDID = "U"

    public init(
        connectFailures: Int = 0, installDelay: Duration = .zero, installError: (any Error)? = nil,
        crashes: [URL] = [], launchError: (any Error)? = nil
    ) {
        self.connectFailures = connectFailures
        self.installDelay = installDelay
        self.installError = installError
        self.crashes = crashes
        self.launchError = launchError
        super.init()
    }

    public struct Reset: Error, TransientClassifying, CustomStringConvertible {
        public var isTransient: Bool { true }
        public var description: String { "connection reset by device" }
    }

    public override func connect() async throws -> ConnectedDevice {
        let fail = lock.withLock {
            connects += 1
            if connectFailures > 0 {
                connectFailures -= 1
                return true
            }
            return false
        }
        if fail { throw Reset() }
        return ConnectedDevice(
            udid: reportedUDID, name: "Virtual", productType: "iPad5,1", iosVersion: "15.8", arch: "arm64")
    }
    public override func prepare() async throws {}
    public override func install(
        _ artifact: Artifact, force: Bool, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> InstallOutcome {
        lock.withLock { installs += 1 }
        progress(TransferProgress(bytesDone: 50, bytesTotal: 100, percent: 50, phase: "upload"))
        try await Task.sleep(for: installDelay)
        if let installError { throw installError }
        return .installed
    }
    public override func launch(_ artifact: Artifact, settings launch: ResolvedLaunch) async throws {
        if let launchError { throw launchError }
        lock.withLock { launched.append(launch.arguments) }
    }
    public override func crashReports(of artifact: Artifact, since: Date, into directory: URL) async throws
        -> [URL]
    {
        crashes
    }
    public override func screenshot() async throws -> Data { Data([0x89, 0x50, 0x4E, 0x47]) }
    public override func appDataFile(_ artifact: Artifact, relativePath: String) async throws -> Data? {
        throw AppDataUnavailable("\(type(of: self)) cannot read the app's data container")
    }
}
