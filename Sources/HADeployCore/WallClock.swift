import Foundation

/// The time of day, elapsed time and waiting, injected through the context so tests control time (a
/// fake clock they advance) instead of sleeping. Deadlines, retries and polling go through it: the
/// live one is `HADeployContext.live().clock`.
public protocol WallClock: Sendable {
    /// The time of day (for records and reports; it may jump).
    func now() -> Date
    /// A monotonic reading for elapsed times and deadlines: it never goes back, whatever the time of
    /// day does. Only differences between two readings of the same clock mean something.
    func instant() -> ContinuousClock.Instant
    /// Waits `duration` (throws `CancellationError` when the task is cancelled).
    func sleep(for duration: Duration) async throws
}

extension WallClock {
    /// The instant `duration` from now.
    public func deadline(after duration: Duration) -> ContinuousClock.Instant { instant() + duration }

    /// How long since `start` (a reading of this clock).
    public func elapsed(since start: ContinuousClock.Instant) -> Duration { instant() - start }

    /// How long until `deadline` (a reading of this clock), never negative.
    public func remaining(until deadline: ContinuousClock.Instant) -> Duration {
        max(deadline - instant(), .zero)
    }

    /// Waits until `deadline` (at once when it has passed).
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let left = remaining(until: deadline)
        if left > .zero { try await sleep(for: left) }
    }

    /// Runs `body` and returns its answer, or nil when `limit` passes first; the body is then
    /// cancelled (and awaited: it must stop when cancelled). The body's own error is thrown.
    public func withDeadline<T: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T? {
        try await withThrowingTaskGroup(of: Answer<T>.self) { group in
            group.addTask { .answered(try await body()) }
            group.addTask {
                try await sleep(for: limit)
                return .timedOut
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            guard case .answered(let value) = first else { return nil }
            return value
        }
    }
}

/// The body's answer or the end of its time (an optional answer stays distinct from a timeout).
private enum Answer<T: Sendable>: Sendable {
    case answered(T)
    case timedOut
}

/// The machine's clock: only `HADeployContext.live()` makes one.
struct LiveClock: WallClock {
    func now() -> Date { Date() }
    func instant() -> ContinuousClock.Instant { ContinuousClock.now }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
