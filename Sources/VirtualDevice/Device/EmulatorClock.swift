import Foundation

/// The emulator's own clock: the time a virtual device shows (lockdown's answer, log lines, crash
/// reports, pairing certificates, file dates) — a device has a clock of its own, not its host's
/// context. The one place in the emulator that reads the time of day.
enum EmulatorClock {
    static func now() -> Date { Date() }
}
