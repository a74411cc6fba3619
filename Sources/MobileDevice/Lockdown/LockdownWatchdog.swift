import Foundation
import HADeployCore

/// Races a lockdownd exchange against a `LockdownProbe` on the side.
///
/// A healthy lockdownd answers within milliseconds. When an exchange has not finished after
/// `LockdownProbe.patience` (or fails with a protocol or connection error), the probe asks the
/// device again over a connection of its own; a reply that is not lockdownd's protocol ends the
/// exchange at once, saying what came back, instead of at libimobiledevice's 30 s receive timeout
/// or the step's deadline. A healthy or merely slow reply changes nothing.
enum LockdownWatchdog {
    static func watch<T: Sendable>(
        _ step: String, device: DeviceIdentity, budget: Duration, clock: any WallClock,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await operation() }
                group.addTask {
                    try await clock.sleep(for: min(LockdownProbe.patience, budget / 3))
                    if case .broken(let what) = await LockdownProbe.inBackground(udid: device.udid) {
                        throw garbled(what, step: step, device: device)
                    }
                    return nil
                }
                while let result = try await group.next() {
                    if let value = result {
                        group.cancelAll()
                        return value
                    }
                }
                throw CancellationError()
            }
        } catch let error as MobileDeviceError
            where (error.kind == .protocolError || error.kind == .connectionLost)
            && !error.reason.hasPrefix(prefix)
        {
            // libimobiledevice reduced the reply to an error code: say what the device really sent.
            if case .broken(let what) = await LockdownProbe.inBackground(udid: device.udid) {
                throw garbled(what, step: error.step, device: device)
            }
            throw error
        }
    }

    private static let prefix = "lockdownd's reply"

    private static func garbled(_ what: String, step: String, device: DeviceIdentity) -> MobileDeviceError {
        MobileDeviceError(
            .protocolError, step: step, device: device,
            reason: "\(prefix) on port \(LockdownProbe.port) is wrong: \(what)",
            nextStep:
                "Restart the device (its lockdownd is broken) or check that nothing between this computer "
                + "and the device (a usbmuxd proxy or port forwarder) answers in its place.")
    }
}
