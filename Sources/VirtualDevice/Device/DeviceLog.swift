import Foundation

/// The device's log: what daemons and the running app write, relayed live to the clients of
/// `com.apple.syslog_relay` (text lines) and `com.apple.os_trace_relay` (binary records).
///
/// A real device only relays what is logged while the client listens; so does this one.
final class DeviceLog: Sendable {
    struct Entry: Sendable {
        let date: Date
        let process: String
        let pid: Int
        /// "Notice", "Info", "Debug", "Error" or "Fault".
        let level: String
        let message: String
    }

    /// The host name in syslog lines (`iPad-mini-4`).
    let hostName: String
    private let listeners = Broadcast<Entry>(buffer: 4096)

    init(deviceName: String) {
        hostName = String(deviceName.map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }

    /// Every entry logged from now on; finish it with `stopListening`.
    func listen() -> (id: Int, entries: AsyncStream<Entry>) {
        let (id, entries) = listeners.listen()
        return (id, entries)
    }

    func stopListening(_ id: Int) {
        listeners.stopListening(id)
    }

    /// How many clients read the log now.
    var readerCount: Int { listeners.listenerCount }

    /// Logs `message` as `process[pid]` at `level`.
    func log(_ message: String, process: String, pid: Int, level: String = "Notice") {
        let entry = Entry(
            date: EmulatorClock.now(), process: process, pid: pid, level: level, message: message)
        listeners.send(entry)
    }

    /// The classic syslog line (`Nov 23 10:25:30 iPad-mini-4 HADashboard[301] <Notice>: text`).
    func line(_ entry: Entry) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "MMM dd HH:mm:ss"
        return "\(formatter.string(from: entry.date)) \(hostName) \(entry.process)[\(entry.pid)] "
            + "<\(entry.level)>: \(entry.message)"
    }
}
