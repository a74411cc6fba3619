import Foundation

/// Stop flag and completion signal shared between the forwarder and its pump.
final class PumpControl: @unchecked Sendable {
    private let lock = NSLock()
    private var stopRequested = false
    private var finished = false
    private var failureReason: String?
    private let done = DispatchSemaphore(value: 0)

    func requestStop() { lock.withLock { stopRequested = true } }
    var shouldStop: Bool { lock.withLock { stopRequested } }
    var failure: String? { lock.withLock { failureReason } }

    func finish(failure: String?) {
        lock.withLock {
            finished = true
            failureReason = failure
        }
        done.signal()
    }

    func waitUntilFinished(timeout: Double) async {
        let done = self.done
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // A thread of its own: this wait must neither block Swift's pool nor the watchdog queue.
            Thread.detachNewThread {
                _ = done.wait(timeout: .now() + timeout)
                continuation.resume()
            }
        }
    }
}
