import Foundation
import HADeployCore
import Testing

/// A fail-by-default `WallClock` for tests: it shows the time it was given and moves only when the
/// test advances it (a `sleep` advances it by the time slept, at once). Asking a clock that was given
/// no time fails the test. Its monotonic `instant()` starts at an arbitrary point and moves with it.
/// A `withDeadline` on it is over at the first yield unless the body answers without waiting.
public final class FakeClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date?
    private var slept: [Duration] = []
    /// How far the clock has been moved since it was made.
    private var moved: Duration = .zero
    private let origin = ContinuousClock.Instant.now

    public init(now: Date? = nil) { current = now }

    /// Every `sleep` asked for, in order.
    public var sleeps: [Duration] { lock.withLock { slept } }

    public func advance(by duration: Duration) {
        lock.withLock {
            current = current?.addingTimeInterval(duration.fakeClockSeconds)
            moved += duration
        }
    }

    public func now() -> Date {
        guard let date = lock.withLock({ current }) else {
            Issue.record("FakeClock: unexpected now() (the clock was given no time)")
            return Date(timeIntervalSince1970: 0)
        }
        return date
    }

    public func instant() -> ContinuousClock.Instant {
        let (set, moved) = lock.withLock { (current != nil, self.moved) }
        if !set { Issue.record("FakeClock: unexpected instant() (the clock was given no time)") }
        return origin + moved
    }

    public func sleep(for duration: Duration) async throws {
        let set = lock.withLock {
            slept.append(duration)
            return current != nil
        }
        guard set else {
            Issue.record("FakeClock: unexpected sleep(for: \(duration)) (the clock was given no time)")
            throw CancellationError()
        }
        try Task.checkCancellation()
        advance(by: duration)
        await Task.yield()
    }
}

extension Duration {
    fileprivate var fakeClockSeconds: TimeInterval {
        TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
    }
}
