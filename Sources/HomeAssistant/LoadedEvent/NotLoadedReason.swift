/// Why the app's dashboard was not seen loaded. Open: a transport adds its own (say, the app
/// crashed) with ``init(code:message:)`` or ``appCrashed(_:)``.
public struct NotLoadedReason: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `timed_out`, `home_assistant_unreachable`, `app_crashed`, or a transport's own code.
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// No matching event before the deadline while Home Assistant was reachable.
    public static func timedOut(after timeout: Duration, device: String?, reconnects: Int) -> NotLoadedReason
    {
        var message =
            "no \(DashboardLoadedEvent.eventType) event\(device.map { " from \($0)" } ?? "") within "
            + "\(timeout.secondsText): check that the app is running, shows its dashboard, and can reach "
            + "Home Assistant"
        if reconnects > 0 {
            message +=
                " (the connection to Home Assistant dropped \(reconnects) time(s) meanwhile; an event fired "
                + "then was missed)"
        }
        return NotLoadedReason(code: "timed_out", message: message)
    }

    /// The connection to Home Assistant was lost and not back before the deadline.
    public static func homeAssistantUnreachable(server: String, detail: String) -> NotLoadedReason {
        NotLoadedReason(
            code: "home_assistant_unreachable",
            message:
                "Home Assistant at \(server) stopped answering while waiting for the "
                + "\(DashboardLoadedEvent.eventType) event (\(detail)), so the app's load could not be seen: "
                + "check the server, then verify again")
    }

    /// The transport saw the app die.
    public static func appCrashed(_ detail: String) -> NotLoadedReason {
        NotLoadedReason(
            code: "app_crashed", message: "the app crashed before loading its dashboard: \(detail)")
    }
}
