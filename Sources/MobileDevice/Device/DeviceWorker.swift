import Foundation

/// The dedicated thread (a serial dispatch queue) on which every blocking C call of one device
/// connection runs, so they never block Swift's cooperative thread pool, and never run two at a
/// time on the same handles (libimobiledevice clients are not thread-safe).
///
/// Every call has a deadline. libimobiledevice calls cannot be interrupted, so when the deadline
/// passes the caller gets an error naming the step at once, and the C call is abandoned: it finishes
/// (or not) on this queue, and the worker refuses further work, because its handles are still busy.
final class DeviceWorker: @unchecked Sendable {
    let queue: DispatchQueue
    let device: DeviceIdentity?
    private let lock = NSLock()
    private var abandonedAt: String?

    init(label: String, device: DeviceIdentity?) {
        self.queue = DispatchQueue(label: "hadeploy.usb.\(label)", qos: .userInitiated)
        self.device = device
    }

    /// The step that was abandoned, if any; a worker with an abandoned step accepts no more work.
    var abandonedStep: String? { lock.withLock { abandonedAt } }

    /// Runs `body` on the worker's queue, bounded by `budget` (a dispatch timer: the C call blocks a
    /// thread, and no clock can wake it).
    func run<T: Sendable>(
        _ step: String, within budget: Duration, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        if let busy = abandonedStep {
            throw MobileDeviceError(
                .connectionLost, step: step, device: device,
                reason:
                    "the connection is unusable: an earlier step (\(busy)) is still blocked in the C library",
                nextStep: "Reconnect to the device; unplug and replug it if this keeps happening.",
                isTransient: true)
        }
        let remaining = budget
        guard remaining > .zero else { throw deadlineError(step, budget: .zero) }
        if Task.isCancelled {
            throw MobileDeviceError(
                .cancelled, step: step, device: device, reason: "the operation was cancelled",
                nextStep: "Nothing to do; run it again when needed.")
        }
        let cancellation = CancellationLink()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let once = ResumeOnce(continuation)
                queue.async {
                    once.resume(Result { try body() })
                }
                // Not the context's clock: the C call blocks a thread, and only a dispatch timer fires beside it.
                DispatchQueue.global().asyncAfter(deadline: .now() + remaining.dispatchInterval) {
                    [weak self] in
                    guard let self else { return }
                    // Marked abandoned before the caller wakes: its next call is refused, never
                    // queued behind the blocked one.
                    once.resume(.failure(self.deadlineError(step, budget: remaining))) { self.abandon(step) }
                }
                cancellation.set(once: once, step: step, worker: self)
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    fileprivate func abandon(_ step: String) {
        lock.withLock { if abandonedAt == nil { abandonedAt = step } }
    }

    private func deadlineError(_ step: String, budget: Duration) -> MobileDeviceError {
        MobileDeviceError(
            .deadlineExceeded, step: step, device: device,
            reason: "no answer within \(budget.secondsText) (the deadline for this step)",
            nextStep:
                "Check that the device is unlocked and responsive and the cable or usbmuxd host is working; "
                + "unplug and replug the device if it keeps happening.",
            isTransient: true)
    }
}

/// Connects a task's cancellation (whose handler runs outside the continuation closure) to the
/// call in flight.
private final class CancellationLink: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelAction: (@Sendable () -> Void)?
    private var cancelled = false

    func set<T: Sendable>(once: ResumeOnce<T>, step: String, worker: DeviceWorker) {
        let action: @Sendable () -> Void = { [weak worker] in
            let error = MobileDeviceError(
                .cancelled, step: step, device: worker?.device, reason: "the operation was cancelled",
                nextStep: "Nothing to do; run it again when needed.")
            once.resume(.failure(error)) { worker?.abandon(step) }
        }
        let fireNow: Bool = lock.withLock {
            cancelAction = action
            return cancelled
        }
        if fireNow { action() }
    }

    func cancel() {
        let action: (@Sendable () -> Void)? = lock.withLock {
            cancelled = true
            return cancelAction
        }
        action?()
    }
}

extension Duration {
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if nanos.overflow || seconds > Int64(Int.max / 1_000_000_000) { return .never }
        return .nanoseconds(Int(nanos.partialValue + attoseconds / 1_000_000_000))
    }

    /// "30 s", "1.5 s", "250 ms".
    var secondsText: String {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        if millis < 1000 { return "\(millis) ms" }
        // Deadlines computed from "now" lose a few microseconds: 1.9999 s reads "2 s".
        let tenths = (millis + 50) / 100
        if tenths % 10 == 0 { return "\(tenths / 10) s" }
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
