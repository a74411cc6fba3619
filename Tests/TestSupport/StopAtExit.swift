import Foundation

/// Stops every peer still running when the test process exits (Swift Testing has no global
/// teardown). The peers' own watchers (`HA_PEER_WATCH_PID`) cover a crash.
enum StopAtExit {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var directories: Set<String> = []
    nonisolated(unsafe) private static var installed = false

    static func register(_ directory: URL) {
        lock.lock()
        defer { lock.unlock() }
        directories.insert(directory.path)
        if !installed {
            installed = true
            atexit { StopAtExit.stopAll() }
        }
    }

    static func unregister(_ directory: URL) {
        lock.lock()
        defer { lock.unlock() }
        directories.remove(directory.path)
    }

    private static func stopAll() {
        lock.lock()
        let all = directories
        directories.removeAll()
        lock.unlock()
        for directory in all {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [HomeAssistantServer.script, "stop", directory]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try? process.run()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
