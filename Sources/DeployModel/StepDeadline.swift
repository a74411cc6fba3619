import HADeployCore

/// A step that did not finish in time.
public struct StepTimeout: Error, CustomStringConvertible, TransientClassifying {
    public var step: String
    public var limit: Duration

    public var description: String {
        "\(step) did not finish within \(limit.formattedSeconds) (deadline; raise `timeouts.\(step)` in devices.yaml if the link is slow)"
    }

    /// A stall is not retried: the device is not answering, and retrying would double the wait.
    public var isTransient: Bool { false }
}

/// Runs `body` and throws `StepTimeout` if it is not done within `limit` (timed by `clock`); the body
/// is cancelled.
public func withDeadline<T: Sendable>(
    _ step: String, _ limit: Duration, clock: any WallClock, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard let value = try await clock.withDeadline(limit, body) else {
        throw StepTimeout(step: step, limit: limit)
    }
    return value
}
