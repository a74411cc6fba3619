import Foundation
import HADeployCore
import NIOConcurrencyHelpers

/// The app's own log, `Documents/ha-log.txt`, written the way its HALog class writes it: a session
/// header per launch, `+%8.1fms` stamps for the first 30 s and wall-clock `HH:mm:ss.SSS` after,
/// `%5s` level names, rotation to `ha-log-prev.txt` at 2 MB, and `=== CRASH:` blocks.
final class AppLogFile: Sendable {
    enum Level: Int, Sendable {
        case debug = 0
        case info
        case warning
        case error

        var name: String { ["DEBUG", "INFO", "WARN", "ERROR"][rawValue] }
    }

    let current: URL
    let previous: URL
    let rotationSize: Int
    private let fileSystem: any FileSystem
    private let started = ContinuousClock.now
    private let startDate = EmulatorClock.now()
    private let lock = NIOLock()
    private let minimum: Level

    /// Opens (creating) the log in `documents` and appends the session header.
    init(
        documents: URL, model: String, systemVersion: String, minimum: Level = .info,
        rotationSize: Int = 2 * 1024 * 1024, fileSystem: any FileSystem
    ) {
        current = documents.appendingPathComponent("ha-log.txt")
        previous = documents.appendingPathComponent("ha-log-prev.txt")
        self.rotationSize = rotationSize
        self.minimum = minimum
        self.fileSystem = fileSystem
        try? fileSystem.createDirectory(at: documents, withIntermediateDirectories: true)
        append(
            "\n=== HA Dashboard log session ===\nDevice: \(model) / iOS \(systemVersion)\n"
                + "Date: \(Self.nsDateDescription(startDate))\nMin level: \(minimum.name)\n\n")
    }

    /// `NSDate`'s description: `2026-11-23 10:01:02 +0000`.
    static func nsDateDescription(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return formatter.string(from: date)
    }

    private var elapsedMilliseconds: Double {
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    private var stamp: String {
        if EmulatorClock.now().timeIntervalSince(startDate) < 30 {
            return "+" + Self.pad(String(format: "%.1f", elapsedMilliseconds), 8) + "ms"
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: EmulatorClock.now())
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// `[HALog logStartup:]`: no level, two spaces.
    func startup(_ message: String) {
        append(stamp + "  [startup] " + message + "\n")
    }

    func log(_ level: Level, _ tag: String, _ message: String) {
        guard level.rawValue >= minimum.rawValue || level == .error else { return }
        append("\(stamp) \(Self.pad(level.name, 5)) [\(tag)] \(message)\n")
    }

    func info(_ tag: String, _ message: String) { log(.info, tag, message) }
    func warn(_ tag: String, _ message: String) { log(.warning, tag, message) }
    func error(_ tag: String, _ message: String) { log(.error, tag, message) }

    /// What the signal handler writes before the process dies.
    func crash(signal: Int32, name: String, frames: [String]) {
        append(
            "\n\n=== CRASH: Signal \(signal) (\(name)) ===\nStack:\n" + frames.map { $0 + "\n" }.joined()
                + "=================================\n")
    }

    private func append(_ text: String) {
        lock.withLock {
            guard let size = try? fileSystem.append(Data(text.utf8), toFileAtPath: current.path) else {
                return
            }
            if size >= rotationSize {
                try? fileSystem.removeItem(at: previous)
                try? fileSystem.moveItem(at: current, to: previous)
                _ = fileSystem.createFile(atPath: current.path, contents: nil)
            }
        }
    }
}
