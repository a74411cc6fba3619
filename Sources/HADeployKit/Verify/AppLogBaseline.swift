import Foundation

/// What `ha-log.txt` held before the launch, so only what the launch wrote counts: the byte size
/// of the current file (the log only grows, until it rotates to `ha-log-prev.txt`) and its first
/// bytes (a rotated file starts differently, however long it has grown since).
public struct AppLogBaseline: Sendable, Hashable {
    public static let current = "Documents/ha-log.txt"
    public static let previous = "Documents/ha-log-prev.txt"

    /// nil when the log could not be read before the launch: then the session dates decide.
    public var size: Int?
    public var head: Data

    public init(size: Int?, head: Data = Data()) {
        self.size = size
        self.head = head
    }

    /// The baseline of a log that holds `data` now (nil: no log yet).
    public init(_ data: Data?) {
        size = data?.count ?? 0
        head = Data((data ?? Data()).prefix(256))
    }

    /// The text written after the baseline. When the current file is smaller than before, it was
    /// rotated: the rest of the previous file comes first.
    public func newText(current: Data, previous: () async throws -> Data?) async rethrows -> String {
        guard let size else { return String(decoding: current, as: UTF8.self) }
        if current.count >= size && current.prefix(head.count) == head {
            return String(decoding: current.dropFirst(size), as: UTF8.self)
        }
        let before = try await previous() ?? Data()
        return String(decoding: before.dropFirst(min(size, before.count)), as: UTF8.self)
            + String(decoding: current, as: UTF8.self)
    }

    /// The newest session in `text` that belongs to a launch at `launchedAt`: with a baseline every
    /// session in the new text does; without one, its header date must not be older than the
    /// launch (allowing `tolerance` for the device's clock).
    public func newestSession(in text: String, launchedAt: Date, tolerance: TimeInterval = 30)
        -> AppLogSession?
    {
        let sessions = AppLogSession.sessions(in: text)
        if size != nil { return sessions.last }
        return sessions.last { session in
            guard let date = session.date else { return false }
            return date >= launchedAt.addingTimeInterval(-tolerance)
        }
    }
}
