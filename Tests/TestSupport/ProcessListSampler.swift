import Foundation

/// Reads every process's command line (what `ps` shows any local user: `TestPlatform.commandLines`)
/// over and
/// over on a thread of its own, and keeps each one that contains a secret. Start it before the
/// launch under test, stop it after: a leak lasting a few milliseconds is still seen.
public final class ProcessListSampler: @unchecked Sendable {
    private let needles: [String]
    private let lock = NSLock()
    private var running = true
    private var hits: [String] = []
    private var samples = 0
    private let finished = DispatchSemaphore(value: 0)

    public init(secrets: [String]) {
        needles = secrets.filter { !$0.isEmpty }
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                sampleOnce()
                usleep(1000)
            }
            finished.signal()
        }
        thread.name = "hadeploy.process-list-sampler"
        thread.start()
    }

    /// Stops sampling; returns the command lines (NULs as spaces) that held a secret.
    public func stop() -> (leaks: [String], samples: Int) {
        lock.withLock { running = false }
        finished.wait()
        return lock.withLock { (hits, samples) }
    }

    private func sampleOnce() {
        for line in TestPlatform.commandLines() {
            if needles.contains(where: line.contains) {
                lock.withLock { hits.append(line) }
            }
        }
        lock.withLock { samples += 1 }
    }
}
