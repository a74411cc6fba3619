import Foundation
import NIOConcurrencyHelpers

/// The device's system log as `com.apple.syslog_relay` streams it: one line per message in the
/// classic syslog shape (`Nov 23 10:25:30 iPad-mini-4 HADashboard[301] <Notice>: text`), each
/// followed by a NUL, which is how pymobiledevice3 splits the stream.
///
/// A real device only relays what is logged while the client listens; so does this one.
final class DeviceLog: Sendable {
    private let hostName: String
    private let listeners = NIOLockedValueBox<[Int: AsyncStream<String>.Continuation]>([:])
    private let nextID = NIOLockedValueBox(0)

    init(deviceName: String) {
        hostName = deviceName.map { $0.isLetter || $0.isNumber ? $0 : "-" }.reduce(into: "") { $0.append($1) }
    }

    /// Every line logged from now on; finish it with `stopListening`.
    func listen() -> (id: Int, lines: AsyncStream<String>) {
        let (lines, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let id = nextID.withLockedValue { value in
            value += 1
            return value
        }
        listeners.withLockedValue { $0[id] = continuation }
        return (id, lines)
    }

    func stopListening(_ id: Int) {
        listeners.withLockedValue { $0.removeValue(forKey: id) }?.finish()
    }

    /// Logs `message` as `process[pid]` at `level` ("Notice", "Error", …).
    func log(_ message: String, process: String, pid: Int, level: String = "Notice") {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "MMM dd HH:mm:ss"
        let line = "\(formatter.string(from: Date())) \(hostName) \(process)[\(pid)] <\(level)>: \(message)"
        for continuation in listeners.withLockedValue({ Array($0.values) }) { continuation.yield(line) }
    }
}
