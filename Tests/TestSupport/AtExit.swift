import Foundation

/// Cleans up after the test process when it exits (Swift Testing has no global teardown): each
/// registered directory gets its `stop` (a peer still running) and is then removed. A crash skips
/// this; the peers' own lifelines and watchers (`HA_PEER_WATCH_PID`, ``Lifeline``) cover it.
enum AtExit {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var entries: [String: @Sendable () -> Void] = [:]
    nonisolated(unsafe) private static var installed = false

    /// Removes `directory` at exit, after `stop`.
    static func register(_ directory: URL, stop: @escaping @Sendable () -> Void = {}) {
        lock.lock()
        defer { lock.unlock() }
        entries[directory.path] = stop
        if !installed {
            installed = true
            atexit { AtExit.runAll() }
        }
    }

    /// The test cleaned up `directory` itself.
    static func unregister(_ directory: URL) {
        lock.lock()
        defer { lock.unlock() }
        entries[directory.path] = nil
    }

    private static func runAll() {
        lock.lock()
        let all = entries
        entries.removeAll()
        lock.unlock()
        for (directory, stop) in all {
            stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
