import Foundation
import HADeployCore

/// The emulator's own clock: the time a virtual device shows (lockdown's answer, log lines, crash
/// reports, pairing certificates, file dates) — a device has a clock of its own, not its host's
/// context. The one place in the emulator that reads the time of day.
enum EmulatorClock {
    static func now() -> Date { Date() }

    /// The same clock as a `WallClock`: what the virtual app's own Home Assistant client times its
    /// deadlines and reconnects with.
    static let wallClock: any WallClock = DeviceClock()

    private struct DeviceClock: WallClock {
        func now() -> Date { EmulatorClock.now() }
        func instant() -> ContinuousClock.Instant { ContinuousClock.now }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }
}
