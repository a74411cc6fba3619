import Foundation

/// The time of day and waiting, injected through the context so tests control time (a fake clock
/// they advance) instead of sleeping.
public protocol WallClock: Sendable {
    func now() -> Date
    /// Waits `duration` (throws `CancellationError` when the task is cancelled).
    func sleep(for duration: Duration) async throws
}

/// The machine's clock.
public struct LiveClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
