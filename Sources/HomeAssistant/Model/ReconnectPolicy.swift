/// How a connection comes back after Home Assistant went away (restart, network loss):
/// exponential backoff from `initialDelay`, doubling up to `maximumDelay`, for as long as the
/// connection is open. Requests keep their own deadlines meanwhile.
public struct ReconnectPolicy: Sendable, Hashable {
    public var isEnabled: Bool
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(
        isEnabled: Bool = true, initialDelay: Duration = .milliseconds(200),
        maximumDelay: Duration = .seconds(5)
    ) {
        self.isEnabled = isEnabled
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// No reconnect: a lost connection fails pending requests and ends subscriptions.
    public static let never = ReconnectPolicy(isEnabled: false)

    /// The delay before attempt `attempt` (0-based).
    public func delay(forAttempt attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 0..<min(attempt, 30) {
            delay *= 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}
