/// What ``DashboardLoadWaiter/wait(timeout:)`` found. As JSON:
/// `{"status":"loaded","after_seconds":1.2,"event":{…}}` or
/// `{"status":"not_loaded","reason":{"code":…,"message":…}}`.
public enum DashboardLoadOutcome: Sendable, Hashable, Codable {
    /// The matching event arrived `after` the wait began (zero if it came before).
    case loaded(after: Duration, DashboardLoadedEvent)
    case notLoaded(NotLoadedReason)

    enum CodingKeys: String, CodingKey {
        case status, event, reason
        case afterSeconds = "after_seconds"
    }

    public var isLoaded: Bool {
        if case .loaded = self { return true }
        return false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .loaded(let after, let event):
            try container.encode("loaded", forKey: .status)
            try container.encode(after.seconds, forKey: .afterSeconds)
            try container.encode(event, forKey: .event)
        case .notLoaded(let reason):
            try container.encode("not_loaded", forKey: .status)
            try container.encode(reason, forKey: .reason)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decode(String.self, forKey: .status) == "loaded" {
            let seconds = try container.decode(Double.self, forKey: .afterSeconds)
            // A decoded number may be anything: out of range it would trap in `Int64(_:)`.
            guard seconds.isFinite, abs(seconds) < 1e9 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .afterSeconds, in: container, debugDescription: "after_seconds out of range")
            }
            self = .loaded(
                after: .nanoseconds(Int64((seconds * 1e9).rounded())),
                try container.decode(DashboardLoadedEvent.self, forKey: .event))
        } else {
            self = .notLoaded(try container.decode(NotLoadedReason.self, forKey: .reason))
        }
    }
}
