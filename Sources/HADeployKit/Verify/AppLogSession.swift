import Foundation

/// One launch's part of the app's `ha-log.txt`: from its `=== HA Dashboard log session ===` header
/// to the next one. Entries keep their continuation lines (an NSDictionary printed with `%@` spans
/// several lines).
public struct AppLogSession: Sendable, Hashable {
    /// `Device: iPad / iOS 9.3.5`.
    public var device: String?
    /// `Date:` of the header, when it parses.
    public var date: Date?
    /// Each entry without its time stamp and level: `[conn] WebSocket authenticated`; crash blocks
    /// start with `=== CRASH:`.
    public var entries: [String]

    public init(device: String? = nil, date: Date? = nil, entries: [String] = []) {
        self.device = device
        self.date = date
        self.entries = entries
    }

    static let header = "=== HA Dashboard log session ==="

    /// The sessions in `text`, oldest first; text before the first header (the end of a session
    /// that started earlier) is not a session.
    public static func sessions(in text: String) -> [AppLogSession] {
        var sessions: [AppLogSession] = []
        var current: AppLogSession?
        var inHeader = false
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            if line == header {
                if let current { sessions.append(current) }
                current = AppLogSession()
                inHeader = true
                continue
            }
            guard current != nil else { continue }
            if inHeader {
                if line.hasPrefix("Device: ") {
                    current?.device = String(line.dropFirst(8))
                    continue
                }
                if line.hasPrefix("Date: ") {
                    current?.date = parseDate(String(line.dropFirst(6)))
                    continue
                }
                if line.hasPrefix("Min level: ") { continue }
                if line.isEmpty { continue }
                inHeader = false
            }
            if line.hasPrefix("=== CRASH:") {
                current?.entries.append(line)
            } else if let message = stripStamp(line) {
                current?.entries.append(message)
            } else if !line.isEmpty, !line.hasPrefix("=====") {
                // A continuation of the previous entry (multi-line values, crash stacks).
                if let last = current?.entries.popLast() {
                    current?.entries.append(last + "\n" + line)
                }
            }
        }
        if let current { sessions.append(current) }
        return sessions
    }

    /// `+  1234.5ms  INFO [conn] x` or `10:02:03.456  INFO [conn] x` → `[conn] x`; startup lines
    /// (`+  12.0ms  [startup] x`) have no level. Nil when the line has no stamp.
    static func stripStamp(_ line: String) -> String? {
        var rest = Substring(line)
        if rest.hasPrefix("+") {
            guard let end = rest.range(of: "ms ") else { return nil }
            let number = rest[rest.index(after: rest.startIndex)..<end.lowerBound].trimmingCharacters(
                in: .whitespaces)
            guard Double(number) != nil else { return nil }
            rest = rest[end.upperBound...]
        } else {
            let clock = rest.prefix(12)
            guard clock.count == 12, clock.dropFirst(2).first == ":", clock.dropFirst(5).first == ":",
                clock.dropFirst(8).first == "."
            else { return nil }
            rest = rest.dropFirst(12)
        }
        rest = rest.drop { $0 == " " }
        for level in ["DEBUG ", "INFO ", "WARN ", "ERROR "] where rest.hasPrefix(level) {
            rest = rest.dropFirst(level.count)
            break
        }
        return String(rest)
    }

    /// `NSDate` descriptions: `2026-11-23 10:01:02 +0000`.
    static func parseDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}
